package toolproto

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func fn(name, params string) models.Tool {
	t := models.Tool{Name: name, Description: "does " + name}
	if params != "" {
		t.Parameters = json.RawMessage(params)
	}
	return t
}

func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var apiErr *models.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 400, apiErr.Status)
	assert.Equal(t, models.KindInvalidRequest, apiErr.Kind)
	assert.Equal(t, param, apiErr.Param)
}

func TestNewTrigger(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tr := NewTrigger()
		require.Regexp(t, `^<<CALL_[A-Za-z0-9]{8}>>$`, tr)
		seen[tr] = true
	}
	assert.Len(t, seen, 1000)
}

func msg(role models.Role, text string) models.Message {
	return models.Message{Role: role, Blocks: []models.Block{{Kind: models.BlockText, Text: text}}}
}

func toolCall(id, name, args string) models.Block {
	return models.Block{Kind: models.BlockToolCall, ID: id, Name: name, Arguments: args}
}

func toolResult(id, text string) models.Message {
	return models.Message{Role: models.RoleTool, ToolCallID: id, Blocks: []models.Block{{Kind: models.BlockText, Text: text}}}
}

func TestBuildConversation(t *testing.T) {
	const trigger = "<<CALL_test1234>>"
	tools := []models.Tool{fn("read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`), fn("ls", "")}
	history := []models.Message{
		msg("system", "You are Kilo."),
		msg("user", "Read a.go"),
		{Role: "assistant", Blocks: []models.Block{
			{Kind: models.BlockThinking, Text: "hidden history"},
			{Kind: models.BlockText, Text: "Reading both."},
			toolCall("call_1", "read_file", `{"path":"a.go"}`),
			toolCall("call_2", "ls", ""),
		}},
		toolResult("call_1", "package a"),
		{Role: models.RoleTool, ToolCallID: "call_2", IsError: true, Blocks: []models.Block{{Kind: models.BlockText, Text: "ls: permission denied"}}},
		msg("system", "Be terse."),
		{Role: "user", Blocks: []models.Block{{Kind: models.BlockText, Text: "Now what?"}, {Kind: models.BlockMedia, Text: "image_url"},
			{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
	}
	out, err := BuildConversation(history, PromptOptions{Tools: tools, Choice: models.ToolChoice{Mode: models.ChoiceAuto}, Trigger: trigger, MaxInputLength: 100000})
	require.NoError(t, err)
	roles := make([]models.Role, len(out))
	for i, m := range out {
		roles[i] = m.Role
	}
	assert.Equal(t, []models.Role{"system", "user", "assistant", "user"}, roles, "one system message first; tool results and the next user turn merged")

	sys := out[0].Text
	assert.Contains(t, sys, trigger)
	assert.Contains(t, sys, "<function_list>")
	assert.Contains(t, sys, `<function name="read_file">`)
	assert.Contains(t, sys, `<description>does read_file</description>`)
	assert.Contains(t, sys, `<parameters>{"type":"object","properties":{"path":{"type":"string"}}}</parameters>`)
	assert.Contains(t, sys, `<parameters>{"type":"object","properties":{}}</parameters>`, "a tool without parameters")
	assert.NotContains(t, sys, "MUST call")
	assert.Less(t, strings.Index(sys, "<function_list>"), strings.Index(sys, "You are Kilo."), "the client's system text follows the protocol")
	assert.Contains(t, sys, "Be terse.")

	for _, m := range out {
		assert.NotContains(t, m.Text, "hidden history", "thinking is never replayed as text")
	}
	assert.Equal(t, "Reading both.\n\n"+trigger+"\n<invoke name=\"read_file\">{\"path\":\"a.go\"}</invoke>\n<invoke name=\"ls\">{}</invoke>", out[2].Text)
	assert.Contains(t, out[3].Text, "<tool_result id=\"call_1\" name=\"read_file\">\npackage a\n</tool_result>")
	assert.Contains(t, out[3].Text, "<tool_result id=\"call_2\" name=\"ls\" status=\"error\">\nls: permission denied\n</tool_result>", "a failure is marked")
	assert.Contains(t, sys, `marked status="error" when the function failed`, "and the model told what the mark means")
	assert.True(t, strings.HasSuffix(out[3].Text, "Now what?\n[image_url omitted: this model accepts text only]\n[image omitted: this model accepts text only]"), out[3].Text)
	assert.NotContains(t, out[3].Text, "iVBORw0KGgo", "no image data in the prompt")
}

// TestReplayedCallsReadBack feeds the replay of an earlier call back
// through the parser: a </invoke> inside its arguments must not end it.
func TestReplayedCallsReadBack(t *testing.T) {
	const trigger = "<<CALL_test1234>>"
	args := `{"path":"p.md","content":"a call ends with </invoke>\n"}`
	history := []models.Message{
		msg("user", "Document it"),
		{Role: "assistant", Blocks: []models.Block{toolCall("call_1", "write_file", args)}},
		toolResult("call_1", "ok"),
	}
	out, err := BuildConversation(history, PromptOptions{Tools: []models.Tool{fn("write_file", "")}, Choice: models.ToolChoice{Mode: models.ChoiceAuto}, Trigger: trigger, MaxInputLength: 100000})
	require.NoError(t, err)
	require.Equal(t, models.RoleAssistant, out[2].Role)
	assert.Equal(t, 1, strings.Count(out[2].Text, "</invoke>"), "only the block's own closing tag: %s", out[2].Text)

	p := NewParser(ParserOptions{Trigger: trigger, ToolNames: []string{"write_file"}})
	events := append(p.Feed(out[2].Text), p.Close()...)
	require.Len(t, events, 1, "%+v", events)
	assert.Equal(t, EventToolCall, events[0].Kind)
	assert.JSONEq(t, args, events[0].Arguments)
}

func TestBuildConversationModes(t *testing.T) {
	tools := []models.Tool{fn("ls", "")}
	user := []models.Message{msg("user", "hi"), msg("assistant", "hello"), msg("user", "again")}
	build := func(o PromptOptions) []models.Turn {
		o.MaxInputLength = 100000
		out, err := BuildConversation(user, o)
		require.NoError(t, err)
		return out
	}
	required := build(PromptOptions{Tools: tools, Choice: models.ToolChoice{Mode: models.ChoiceRequired}, Trigger: "<<CALL_x>>"})
	assert.Contains(t, required[0].Text, "you MUST call at least one function")
	named := build(PromptOptions{Tools: tools, Choice: models.ToolChoice{Mode: models.ChoiceFunction, Name: "ls"}, Trigger: "<<CALL_x>>"})
	assert.Contains(t, named[0].Text, `you MUST call the function "ls"`)
	single := build(PromptOptions{Tools: tools, Trigger: "<<CALL_x>>", SingleCall: true})
	assert.Contains(t, single[0].Text, "at most one function")

	none := build(PromptOptions{Tools: tools, Choice: models.ToolChoice{Mode: models.ChoiceNone}, Trigger: "<<CALL_x>>"})
	assert.Equal(t, models.RoleUser, none[0].Role, "no tool prompt with tool_choice none and no system text")
	assert.Len(t, none, 3)

	thinking := build(PromptOptions{Thinking: true})
	assert.Equal(t, models.RoleSystem, thinking[0].Role)
	assert.Contains(t, thinking[0].Text, "<thinking>")
	for _, m := range thinking[1:] {
		if m.Role == "user" {
			assert.True(t, strings.HasSuffix(m.Text, ThinkingHint), m.Text)
		} else {
			assert.NotContains(t, m.Text, ThinkingHint)
		}
	}
}

func TestReplayWithoutTools(t *testing.T) {
	history := []models.Message{
		msg("user", "weather?"),
		{Role: "assistant", Blocks: []models.Block{toolCall("c1", "get_weather", `{"city":"Oslo"}`)}},
		toolResult("c1", "rain"),
		msg("user", "summarise"),
	}
	for _, choice := range []models.ToolChoiceMode{models.ChoiceNone, models.ChoiceAuto} {
		opts := PromptOptions{Choice: models.ToolChoice{Mode: choice}, MaxInputLength: 100000}
		if choice == models.ChoiceNone {
			opts.Tools, opts.Trigger = []models.Tool{fn("get_weather", "")}, ""
		}
		out, err := BuildConversation(history, opts)
		require.NoError(t, err)
		var all string
		for _, m := range out {
			all += m.Text
		}
		assert.NotContains(t, all, "<invoke", "no markup to copy when no tool can be called")
		assert.Contains(t, all, `(I called the function get_weather with {"city":"Oslo"}.)`)
		assert.Contains(t, all, `<tool_result id="c1" name="get_weather">`)
	}
}

func TestBuildConversationErrors(t *testing.T) {
	_, err := BuildConversation(nil, PromptOptions{})
	requireParam(t, err, "messages")
	_, err = BuildConversation([]models.Message{msg("system", "only")}, PromptOptions{})
	requireParam(t, err, "messages")
	_, err = BuildConversation([]models.Message{msg("user", "x"), msg("wizard", "y")}, PromptOptions{})
	requireParam(t, err, "messages")
}

func TestTrimHistory(t *testing.T) {
	long := strings.Repeat("x", 400)
	msgs := []models.Turn{
		{Role: "system", Text: "sys"},
		{Role: "user", Text: "old question " + long},
		{Role: "assistant", Text: "old answer " + long},
		{Role: "user", Text: "<tool_result id=\"1\">" + long + "</tool_result>"},
		{Role: "assistant", Text: "mid answer"},
		{Role: "user", Text: "latest question"},
	}
	out, err := trimHistory(msgs, 2000)
	require.NoError(t, err)
	assert.Equal(t, msgs, out, "under the limit nothing is dropped")

	out, err = trimHistory(msgs, 900)
	require.NoError(t, err)
	assert.Equal(t, models.RoleSystem, out[0].Role)
	assert.Equal(t, "latest question", out[len(out)-1].Text)
	assert.Equal(t, models.RoleUser, out[1].Role)
	assert.False(t, strings.HasPrefix(out[1].Text, "<tool_result"), "the kept history does not start with a tool result")
	total := 0
	for _, m := range out {
		total += len(m.Text)
	}
	assert.LessOrEqual(t, total, 900)

	out, err = trimHistory(msgs, 30)
	require.NoError(t, err)
	assert.Equal(t, []models.Turn{msgs[0], msgs[5]}, out, "only the system prompt and the last user message are left")

	_, err = trimHistory([]models.Turn{{Role: "system", Text: long}, {Role: "user", Text: long}}, 500)
	var apiErr *models.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "context_length_exceeded", apiErr.Code)
	assert.Contains(t, apiErr.Message, "MAX_INPUT_LENGTH")
}

package services

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/utils"
)

func fn(name, params string) models.Tool {
	t := models.Tool{Type: "function", Function: models.FunctionSpec{Name: name, Description: "does " + name}}
	if params != "" {
		t.Function.Parameters = json.RawMessage(params)
	}
	return t
}

func requireParam(t *testing.T, err error, param string) {
	t.Helper()
	var apiErr *models.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 400, apiErr.Status)
	assert.Equal(t, models.ErrInvalidRequest, apiErr.Type)
	assert.Equal(t, param, apiErr.Param)
}

func TestValidateTools(t *testing.T) {
	cases := []struct {
		name  string
		tools []models.Tool
		param string
	}{
		{"ok", []models.Tool{fn("a", `{"type":"object"}`), fn("b.c-d_e", "")}, ""},
		{"not a function", []models.Tool{{Type: "code_interpreter"}}, "tools[0].type"},
		{"missing name", []models.Tool{fn("a", ""), fn("", "")}, "tools[1].function.name"},
		{"bad characters", []models.Tool{fn("read file", "")}, "tools[0].function.name"},
		{"too long", []models.Tool{fn(strings.Repeat("x", 65), "")}, "tools[0].function.name"},
		{"duplicate", []models.Tool{fn("a", ""), fn("b", ""), fn("a", "")}, "tools[2].function.name"},
		{"parameters not an object", []models.Tool{fn("a", `"string"`)}, "tools[0].function.parameters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTools(tc.tools)
			if tc.param == "" {
				assert.NoError(t, err)
				return
			}
			requireParam(t, err, tc.param)
		})
	}
}

func TestParseToolChoice(t *testing.T) {
	tools := []models.Tool{fn("get_weather", "")}
	ok := []struct {
		raw  string
		want ToolChoice
	}{
		{``, ToolChoice{Mode: ChoiceAuto}},
		{`null`, ToolChoice{Mode: ChoiceAuto}},
		{`"auto"`, ToolChoice{Mode: ChoiceAuto}},
		{`"none"`, ToolChoice{Mode: ChoiceNone}},
		{`"required"`, ToolChoice{Mode: ChoiceRequired}},
		{`{"type":"function","function":{"name":"get_weather"}}`, ToolChoice{Mode: ChoiceFunction, Name: "get_weather"}},
	}
	for _, tc := range ok {
		got, err := ParseToolChoice(json.RawMessage(tc.raw), tools)
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
	bad := []struct{ raw, param string }{
		{`"always"`, "tool_choice"},
		{`42`, "tool_choice"},
		{`{"type":"retrieval"}`, "tool_choice.type"},
		{`{"type":"function","function":{}}`, "tool_choice.function.name"},
		{`{"type":"function","function":{"name":"nope"}}`, "tool_choice.function.name"},
	}
	for _, tc := range bad {
		_, err := ParseToolChoice(json.RawMessage(tc.raw), tools)
		requireParam(t, err, tc.param)
	}
	_, err := ParseToolChoice(json.RawMessage(`"required"`), nil)
	requireParam(t, err, "tool_choice")
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

func msg(role, text string) models.Message {
	return models.Message{Role: role, Content: models.Content{Text: text}}
}

func TestBuildConversation(t *testing.T) {
	const trigger = "<<CALL_test1234>>"
	tools := []models.Tool{fn("read_file", `{"type":"object","properties":{"path":{"type":"string"}}}`), fn("ls", "")}
	history := []models.Message{
		msg("system", "You are Kilo."),
		msg("user", "Read a.go"),
		{Role: "assistant", Content: models.Content{Text: "Reading both."}, ToolCalls: []models.ToolCall{
			{ID: "call_1", Type: "function", Function: models.FunctionCall{Name: "read_file", Arguments: `{"path":"a.go"}`}},
			{ID: "call_2", Type: "function", Function: models.FunctionCall{Name: "ls", Arguments: ""}},
		}},
		{Role: "tool", ToolCallID: "call_1", Content: models.Content{Text: "package a"}},
		{Role: "tool", ToolCallID: "call_2", Content: models.Content{Text: "a.go"}},
		msg("developer", "Be terse."),
		{Role: "user", Content: models.Content{Text: "Now what?", NonText: []string{"image_url"}}},
	}
	out, err := BuildConversation(history, PromptOptions{Tools: tools, Choice: ToolChoice{Mode: ChoiceAuto}, Trigger: trigger, MaxInputLength: 100000})
	require.NoError(t, err)
	roles := make([]string, len(out))
	for i, m := range out {
		roles[i] = m.Role
	}
	assert.Equal(t, []string{"system", "user", "assistant", "user"}, roles, "one system message first; tool results and the next user turn merged")

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

	assert.Equal(t, "Reading both.\n\n"+trigger+"\n<invoke name=\"read_file\">{\"path\":\"a.go\"}</invoke>\n<invoke name=\"ls\">{}</invoke>", out[2].Text)
	assert.Contains(t, out[3].Text, "<tool_result id=\"call_1\" name=\"read_file\">\npackage a\n</tool_result>")
	assert.Contains(t, out[3].Text, "<tool_result id=\"call_2\" name=\"ls\">\na.go\n</tool_result>")
	assert.True(t, strings.HasSuffix(out[3].Text, "Now what?\n[image_url omitted: this model accepts text only]"), out[3].Text)
}

// TestReplayedCallsReadBack feeds the replay of an earlier call back
// through the parser: a </invoke> inside its arguments must not end it.
func TestReplayedCallsReadBack(t *testing.T) {
	const trigger = "<<CALL_test1234>>"
	args := `{"path":"p.md","content":"a call ends with </invoke>\n"}`
	history := []models.Message{
		msg("user", "Document it"),
		{Role: "assistant", ToolCalls: []models.ToolCall{{ID: "call_1", Type: "function", Function: models.FunctionCall{Name: "write_file", Arguments: args}}}},
		{Role: "tool", ToolCallID: "call_1", Content: models.Content{Text: "ok"}},
	}
	out, err := BuildConversation(history, PromptOptions{Tools: []models.Tool{fn("write_file", "")}, Choice: ToolChoice{Mode: ChoiceAuto}, Trigger: trigger, MaxInputLength: 100000})
	require.NoError(t, err)
	require.Equal(t, "assistant", out[2].Role)
	assert.Equal(t, 1, strings.Count(out[2].Text, "</invoke>"), "only the block's own closing tag: %s", out[2].Text)

	p := utils.NewParser(utils.ParserOptions{Trigger: trigger, ToolNames: []string{"write_file"}})
	events := append(p.Feed(out[2].Text), p.Close()...)
	require.Len(t, events, 1, "%+v", events)
	assert.Equal(t, utils.EventToolCall, events[0].Kind)
	assert.JSONEq(t, args, events[0].Arguments)
}

func TestBuildConversationModes(t *testing.T) {
	tools := []models.Tool{fn("ls", "")}
	user := []models.Message{msg("user", "hi"), msg("assistant", "hello"), msg("user", "again")}
	build := func(o PromptOptions) []UpstreamMessage {
		o.MaxInputLength = 100000
		out, err := BuildConversation(user, o)
		require.NoError(t, err)
		return out
	}
	required := build(PromptOptions{Tools: tools, Choice: ToolChoice{Mode: ChoiceRequired}, Trigger: "<<CALL_x>>"})
	assert.Contains(t, required[0].Text, "you MUST call at least one function")
	named := build(PromptOptions{Tools: tools, Choice: ToolChoice{Mode: ChoiceFunction, Name: "ls"}, Trigger: "<<CALL_x>>"})
	assert.Contains(t, named[0].Text, `you MUST call the function "ls"`)
	single := build(PromptOptions{Tools: tools, Trigger: "<<CALL_x>>", SingleCall: true})
	assert.Contains(t, single[0].Text, "at most one function")

	none := build(PromptOptions{Tools: tools, Choice: ToolChoice{Mode: ChoiceNone}, Trigger: "<<CALL_x>>"})
	assert.Equal(t, "user", none[0].Role, "no tool prompt with tool_choice none and no system text")
	assert.Len(t, none, 3)

	thinking := build(PromptOptions{Thinking: true})
	assert.Equal(t, "system", thinking[0].Role)
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
		{Role: "assistant", ToolCalls: []models.ToolCall{{ID: "c1", Type: "function", Function: models.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}},
		{Role: "tool", ToolCallID: "c1", Content: models.Content{Text: "rain"}},
		msg("user", "summarise"),
	}
	for _, choice := range []ToolChoiceMode{ChoiceNone, ChoiceAuto} {
		opts := PromptOptions{Choice: ToolChoice{Mode: choice}, MaxInputLength: 100000}
		if choice == ChoiceNone {
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
	requireParam(t, err, "messages[1].role")
}

func TestTrimHistory(t *testing.T) {
	long := strings.Repeat("x", 400)
	msgs := []UpstreamMessage{
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
	assert.Equal(t, "system", out[0].Role)
	assert.Equal(t, "latest question", out[len(out)-1].Text)
	assert.Equal(t, "user", out[1].Role)
	assert.False(t, strings.HasPrefix(out[1].Text, "<tool_result"), "the kept history does not start with a tool result")
	total := 0
	for _, m := range out {
		total += len(m.Text)
	}
	assert.LessOrEqual(t, total, 900)

	out, err = trimHistory(msgs, 30)
	require.NoError(t, err)
	assert.Equal(t, []UpstreamMessage{msgs[0], msgs[5]}, out, "only the system prompt and the last user message are left")

	_, err = trimHistory([]UpstreamMessage{{Role: "system", Text: long}, {Role: "user", Text: long}}, 500)
	var apiErr *models.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "context_length_exceeded", apiErr.Code)
	assert.Contains(t, apiErr.Message, "MAX_INPUT_LENGTH")
}

package handlers

import (
	"context"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// Tool search through the Anthropic door, driven by the official Go
// library in the shapes Claude Code 2.1.332 sends (recorded from the real
// CLI with ENABLE_TOOL_SEARCH=true): its ToolSearch tool, a deferred
// placeholder that holds the list open, the found MCP tool deferred, and
// the search's result a tool_reference.

var (
	toolSearchTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        "ToolSearch",
		Description: anthropic.String("Fetches full schema definitions for deferred tools so they can be called."),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"query": map[string]any{"type": "string"}}, Required: []string{"query"}},
	}}
	placeholderTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:         "DeferredToolPlaceholder",
		Description:  anthropic.String("Reserved placeholder that keeps deferred tool loading active; never call this tool."),
		InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{}},
		DeferLoading: anthropic.Bool(true),
	}}
	echoDeferred = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:         "mcp__everything__echo",
		Description:  anthropic.String("Echoes back the input string"),
		InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{"message": map[string]any{"type": "string"}}, Required: []string{"message"}},
		DeferLoading: anthropic.Bool(true),
	}}
)

// toolSearchSession runs the three requests of a search: the search is
// called, its reference loads echo, echo is called, its result answered.
// It returns the final answer's text. note adds Claude Code's text after
// the search's result; without it the turn ends with the result alone.
func toolSearchSession(t *testing.T, s *stack, stream, note bool) string {
	t.Helper()
	c := s.claude("sk-any")
	msgs := []anthropic.MessageParam{userText("Echo hello.")}
	// Before the search Claude Code sends the placeholder alone.
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1000, Messages: msgs,
		Tools: []anthropic.ToolUnionParam{toolSearchTool, placeholderTool}}
	first := claudeAsk(t, c, stream, params)
	require.Equal(t, anthropic.StopReasonToolUse, first.StopReason)
	require.Len(t, first.Content, 1)
	require.Equal(t, "ToolSearch", first.Content[0].Name)

	result := []anthropic.ContentBlockParamUnion{{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: first.Content[0].ID,
		Content: []anthropic.ToolResultBlockParamContentUnion{{OfToolReference: &anthropic.ToolReferenceBlockParam{ToolName: "mcp__everything__echo"}}}}}}
	if note {
		result = append(result, anthropic.NewTextBlock("Tool loaded."))
	}
	msgs = append(msgs, first.ToParam(), anthropic.NewUserMessage(result...))
	params.Messages = msgs
	params.Tools = []anthropic.ToolUnionParam{toolSearchTool, placeholderTool, echoDeferred}
	second := claudeAsk(t, c, stream, params)
	require.Equal(t, anthropic.StopReasonToolUse, second.StopReason)
	var call anthropic.ContentBlockUnion
	for _, b := range second.Content {
		if b.Type == "tool_use" {
			call = b
		}
	}
	require.Equal(t, "mcp__everything__echo", call.Name, "the loaded tool is called")
	assert.JSONEq(t, `{"message":"hello"}`, string(call.Input))

	msgs = append(msgs, second.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "Echo: hello", false)))
	params.Messages = msgs
	third := claudeAsk(t, c, stream, params)
	require.Equal(t, anthropic.StopReasonEndTurn, third.StopReason)
	return third.Content[len(third.Content)-1].Text
}

// On a text back door: the upstream's prompt has no placeholder and no
// unsearched tool; after the reference it has the tool's definition and
// the reference in words.
func TestToolSearchTextBackDoor(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"TRIGGER\n", `<invoke name="ToolSearch">{"query": "select:mcp__everything__echo"}</invoke>`},
				[]string{"TRIGGER\n", `<invoke name="mcp__everything__echo">{"message": "hello"}</invoke>`},
				[]string{"It echoed hello."},
			))
			assert.Equal(t, "It echoed hello.", toolSearchSession(t, s, stream, true))
			reqs := s.up.Requests()
			require.Len(t, reqs, 3)
			prompt := func(i int) string {
				var b strings.Builder
				for _, m := range reqs[i].Messages {
					b.WriteString(m.Role + ": " + m.Text + "\n")
				}
				return b.String()
			}
			for i := range reqs {
				assert.NotContains(t, prompt(i), "DeferredToolPlaceholder", "request %d: the placeholder is never offered", i)
				assert.NotContains(t, prompt(i), "tool_reference", "request %d: no wire markup reaches the model", i)
				assert.Contains(t, prompt(i), `<function name="ToolSearch">`)
			}
			assert.NotContains(t, prompt(0), "mcp__everything__echo", "an unsearched tool is not in the prompt")
			for _, i := range []int{1, 2} {
				assert.Contains(t, prompt(i), `<function name="mcp__everything__echo">`, "request %d: the found tool is offered from then on", i)
				assert.Contains(t, prompt(i), "Echoes back the input string")
				assert.Contains(t, prompt(i), "Tool mcp__everything__echo is loaded")
			}
			assert.Contains(t, prompt(2), "Echo: hello", "the tool's result reaches the model")
		})
	}
}

// On the native back door: the run's tools have no placeholder and no
// unsearched tool; the search's result, which loads a tool the parked run
// was not given, starts a fresh run with it, also when the turn ends with
// the result alone (which would otherwise resume the parked run).
func TestToolSearchNativeBackDoor(t *testing.T) {
	for _, note := range []bool{true, false} {
		t.Run(map[bool]string{true: "with Claude Code's note", false: "result alone"}[note], func(t *testing.T) { toolSearchNative(t, note) })
	}
}

func toolSearchNative(t *testing.T, note bool) {
	s, up := newNativeStack(t, func(req *agentv1.AgentRunRequest) nativetest.Script {
		for _, d := range req.GetMcpTools().GetMcpTools() {
			if d.GetToolName() == "mcp__everything__echo" {
				return nativetest.Script{Steps: []nativetest.Step{
					nativetest.ToolCalls(nativetest.Call{Tool: "mcp__everything__echo", Args: map[string]any{"message": "hello"}}),
					nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "It said: " + rs[len(rs)-1].Text }),
				}}
			}
		}
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "ToolSearch", Args: map[string]any{"query": "select:mcp__everything__echo"}}),
			nativetest.Text("searched"),
		}}
	})
	assert.Equal(t, "It said: Echo: hello", toolSearchSession(t, s, true, note))
	runs := up.Runs()
	require.Len(t, runs, 2, "a fresh run for the loaded tool; the echo's result resumed it")
	names := func(r nativetest.Run) []string {
		var out []string
		for _, d := range r.Request.GetMcpTools().GetMcpTools() {
			out = append(out, d.GetToolName())
		}
		return out
	}
	assert.Equal(t, []string{"ToolSearch"}, names(runs[0]), "no placeholder, no unsearched tool")
	assert.Equal(t, []string{"ToolSearch", "mcp__everything__echo"}, names(runs[1]))
	history := runs[1].Request.GetAction().GetUserMessageAction().GetConversationHistory().String()
	assert.Contains(t, history, "Tool mcp__everything__echo is loaded", "the reference in words")
	assert.NotContains(t, history, "DeferredToolPlaceholder")
}

// count_tokens counts what the model is given: a deferred tool no
// reference loaded costs nothing, and one loaded costs as a tool.
func TestCountTokensDeferredTools(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	c := s.claude("sk-any")
	count := func(tools ...anthropic.ToolUnionParam) int64 {
		params := anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5", Messages: []anthropic.MessageParam{userText("Echo hello.")}}
		for _, tool := range tools {
			params.Tools = append(params.Tools, anthropic.MessageCountTokensToolUnionParam{OfTool: tool.OfTool})
		}
		n, err := c.Messages.CountTokens(context.Background(), params)
		require.NoError(t, err)
		return n.InputTokens
	}
	bare := count(toolSearchTool)
	assert.Equal(t, bare, count(toolSearchTool, placeholderTool, echoDeferred), "deferred tools not loaded are not counted")
	loaded := *echoDeferred.OfTool
	loaded.DeferLoading = anthropic.Bool(false)
	assert.Greater(t, count(toolSearchTool, anthropic.ToolUnionParam{OfTool: &loaded}), bare, "the same tool loaded is")
}

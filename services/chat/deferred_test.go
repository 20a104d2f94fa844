package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// The tools of a client with tool search (Claude Code's shape): its search
// tool, a placeholder that holds the deferred list open, and a deferred
// tool its search may load.
var (
	searchTool      = models.Tool{Name: "ToolSearch", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}
	placeholderTool = models.Tool{Name: "DeferredToolPlaceholder", Description: "never call this tool", Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Deferred: true}
	echoTool        = models.Tool{Name: "mcp__everything__echo", Description: "Echoes back the input", Parameters: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`), Deferred: true}
)

// searched is a conversation in which the client's tool search found echo:
// the search's result is a tool reference.
func searched() []models.Message {
	return []models.Message{
		userText("echo hello"),
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: "toolu_1", Name: "ToolSearch", Arguments: `{"query":"select:mcp__everything__echo"}`}}},
		{Role: models.RoleTool, ToolCallID: "toolu_1", Blocks: []models.Block{{Kind: models.BlockToolReference, Name: "mcp__everything__echo"}}},
	}
}

func toolNames(tools []models.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// A deferred tool is offered only once a tool reference names it, on
// either dialect; the placeholder never is; the reference reaches the
// model in words.
func TestDeferredTools(t *testing.T) {
	cases := []struct {
		name    string
		msgs    []models.Message
		choice  models.ToolChoice
		offered []string
	}{
		{"before the search, only the loaded tools", []models.Message{userText("echo hello")}, models.ToolChoice{},
			[]string{"ToolSearch"}},
		{"after the search, the referenced tool too", searched(), models.ToolChoice{},
			[]string{"ToolSearch", "mcp__everything__echo"}},
		{"a tool choice naming a deferred tool loads it", []models.Message{userText("echo hello")},
			models.ToolChoice{Mode: models.ChoiceFunction, Name: "mcp__everything__echo"}, []string{"ToolSearch", "mcp__everything__echo"}},
	}
	for _, native := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name + map[bool]string{false: " (text)", true: " (native)"}[native]
			t.Run(name, func(t *testing.T) {
				up := &scriptedUpstream{native: native, turns: [][]upstream.Delta{{text("done")}}}
				core := newCore(t, up, Settings{Strict: StrictOff})
				req := &models.Request{Model: "claude-sonnet-4.6", Messages: tc.msgs, Choice: tc.choice,
					Tools: []models.Tool{searchTool, placeholderTool, echoTool}}
				before := *req
				p, err := core.Prepare(req, "req")
				require.NoError(t, err)
				_, err = core.Complete(context.Background(), p)
				require.NoError(t, err)
				require.NotEmpty(t, up.requests) // a forced call's missing one is asked again
				sent := up.requests[0]
				if tc.choice.Mode != models.ChoiceFunction {
					assert.ElementsMatch(t, tc.offered, p.ToolNames, "the names a call may have")
				}

				var prompt strings.Builder
				if native {
					assert.Equal(t, tc.offered, toolNames(sent.Tools), "the native back door's tools")
					for _, m := range sent.Conversation {
						prompt.WriteString(m.Text() + "\n")
						for _, b := range m.Blocks {
							assert.NotEqual(t, models.BlockToolReference, b.Kind, "no back door gets a tool reference block")
						}
					}
				} else {
					assert.Empty(t, sent.Tools)
					for _, m := range sent.Messages {
						prompt.WriteString(m.Text + "\n")
					}
				}
				all := prompt.String()
				assert.NotContains(t, all, "DeferredToolPlaceholder", "the placeholder is never offered")
				if !native {
					assert.Contains(t, all, "ToolSearch")
				}
				if slicesContain(tc.offered, "mcp__everything__echo") {
					if !native {
						assert.Contains(t, all, "Echoes back the input", "the loaded tool's definition is in the prompt")
					}
				} else {
					assert.NotContains(t, all, "mcp__everything__echo", "an unsearched tool is not in the prompt")
					assert.NotContains(t, all, "Echoes back the input")
				}
				if len(tc.msgs) > 1 {
					assert.Contains(t, all, "Tool mcp__everything__echo is loaded", "the reference in words the model reads")
					assert.NotContains(t, all, "tool_reference")
				}
				assert.Equal(t, before, *req, "the client's request is not changed")
				assert.Equal(t, 3, len(req.Tools))
				if len(tc.msgs) > 1 {
					assert.Equal(t, models.BlockToolReference, req.Messages[2].Blocks[0].Kind, "nor its messages")
				}
			})
		}
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A call of a deferred tool no search has loaded is a bad call, asked
// again, as the real API would not let the model make it.
func TestDeferredToolNotCallable(t *testing.T) {
	up := &scriptedUpstream{native: true, turns: [][]upstream.Delta{
		{ncall("call_1", "mcp__everything__echo", `{"message":"hi"}`)},
		{ncall("call_2", "ToolSearch", `{"query":"echo"}`)},
	}}
	core := newCore(t, up, Settings{})
	p, err := core.Prepare(&models.Request{Model: "claude-sonnet-4.6", Messages: []models.Message{userText("echo hi")},
		Tools: []models.Tool{searchTool, placeholderTool, echoTool}}, "req")
	require.NoError(t, err)
	ans, err := core.Complete(context.Background(), p)
	require.NoError(t, err)
	require.Len(t, up.requests, 2)
	require.Len(t, ans.ToolCalls, 1)
	assert.Equal(t, "ToolSearch", ans.ToolCalls[0].Name)
	assert.Contains(t, up.requests[1].Conversation[len(up.requests[1].Conversation)-1].Text(), `"mcp__everything__echo" is not a tool of this conversation`)
}

// A reference to a tool the client never sent says so, rather than
// offering nothing under a name the model would call in vain.
func TestReferenceToUnknownTool(t *testing.T) {
	msgs := searched()
	msgs[2].Blocks[0].Name = "mcp__gone__tool"
	got := withDeferred(&models.Request{Messages: msgs, Tools: []models.Tool{searchTool, echoTool}})
	assert.Equal(t, []string{"ToolSearch"}, toolNames(got.Tools))
	assert.Contains(t, got.Messages[2].Text(), "Tool mcp__gone__tool was found, but the client application did not send its definition")
	assert.Equal(t, models.BlockToolReference, msgs[2].Blocks[0].Kind, "the caller's messages stay as they were")
}

// OfferedTools shares the caller's slice when nothing is held back.
func TestOfferedToolsNothingDeferred(t *testing.T) {
	tools := []models.Tool{searchTool, readTool}
	got := OfferedTools(&models.Request{Tools: tools, Messages: []models.Message{userText("hi")}})
	assert.Equal(t, toolNames(tools), toolNames(got))
	assert.Same(t, &tools[0], &got[0])
}

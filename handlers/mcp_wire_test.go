package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// mcpTurns call add on the stdio server, then fail on the HTTP one, then
// answer.
var mcpTurns = [][]string{
	{"Adding. ", mcpInvoke("mcp__local__add", `{"a":2,"b":40}`)},
	{mcpInvoke("mcp__remote__fail", `{}`)},
	{"It is 42."},
}

func TestMCPResponsesItems(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			s := mcpStack(t, nil, script(t, mcpTurns...))
			r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":"add 2 and 40","stream":`+map[bool]string{false: "false", true: "true"}[stream]+`}`)
			require.Equal(t, http.StatusOK, r.status, r.body)
			body := r.body
			if stream {
				evs := respEvents(t, r)
				var names []string
				for _, ev := range evs {
					if strings.Contains(ev.Name, "mcp") || strings.Contains(ev.Name, "output_item") {
						names = append(names, ev.Name)
					}
					var u responses.ResponseStreamEventUnion
					require.NoError(t, json.Unmarshal([]byte(ev.Data.Raw), &u), ev.Data.Raw)
					switch ev.Name {
					case "response.mcp_call_arguments.delta":
						d := u.AsResponseMcpCallArgumentsDelta()
						assert.Empty(t, d.JSON.ExtraFields, ev.Data.Raw)
						assert.NotEmpty(t, d.ItemID)
					case "response.mcp_call_arguments.done":
						assert.Empty(t, u.AsResponseMcpCallArgumentsDone().JSON.ExtraFields, ev.Data.Raw)
					case "response.mcp_call.in_progress":
						assert.Empty(t, u.AsResponseMcpCallInProgress().JSON.ExtraFields, ev.Data.Raw)
					case "response.mcp_call.completed":
						assert.Empty(t, u.AsResponseMcpCallCompleted().JSON.ExtraFields, ev.Data.Raw)
					case "response.mcp_call.failed":
						assert.Empty(t, u.AsResponseMcpCallFailed().JSON.ExtraFields, ev.Data.Raw)
					case "response.completed":
						body = ev.Data.Get("response").Raw
					}
				}
				mcpEvents := []string{"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done"}
				assert.Equal(t, append(append(append(append([]string{"response.output_item.added", "response.output_item.done"}, // the message "Adding."
					mcpEvents...), "response.mcp_call.completed", "response.output_item.done"),
					mcpEvents...), "response.mcp_call.failed", "response.output_item.done", "response.output_item.added", "response.output_item.done"), names)
			}
			var resp responses.Response
			require.NoError(t, json.Unmarshal([]byte(body), &resp))
			var types []string
			var calls []responses.ResponseOutputItemMcpCall
			for _, item := range resp.Output {
				types = append(types, item.Type)
				if item.Type == "mcp_call" {
					c := item.AsMcpCall()
					assert.Empty(t, c.JSON.ExtraFields, "every field is the SDK's: %s", c.RawJSON())
					calls = append(calls, c)
				}
			}
			if stream {
				assert.Equal(t, []string{"message", "mcp_call", "mcp_call", "message"}, types)
			} else {
				assert.Equal(t, []string{"mcp_call", "mcp_call", "message"}, types, "a whole answer puts the calls first")
			}
			require.Len(t, calls, 2)
			assert.Equal(t, "local", calls[0].ServerLabel)
			assert.Equal(t, "add", calls[0].Name)
			assert.JSONEq(t, `{"a":2,"b":40}`, calls[0].Arguments)
			assert.Equal(t, "42", calls[0].Output)
			assert.Equal(t, "completed", calls[0].Status)
			assert.Equal(t, "remote", calls[1].ServerLabel)
			assert.Equal(t, "failed", calls[1].Status)
			assert.Equal(t, "mcp_tool_execution_error", calls[1].Error.Type)
			assert.Contains(t, calls[1].Error.RawJSON(), "the disk is on fire")
			assert.Equal(t, int64(3*(defaultUsage.Input+defaultUsage.Output)), resp.Usage.TotalTokens)

			// The items go back as input: the calls and results are history.
			follow := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","previous_response_id":"`+resp.ID+`","input":"and now?"}`)
			require.Equal(t, http.StatusOK, follow.status, follow.body)
			reqs := s.up.Requests()
			last := upstreamText(reqs[len(reqs)-1])
			assert.Contains(t, last, "42")
			assert.Contains(t, last, "the disk is on fire")
		})
	}
}

func TestMCPMessagesBlocks(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			s := mcpStack(t, nil, script(t, mcpTurns...))
			r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"add 2 and 40"}],"stream":`+map[bool]string{false: "false", true: "true"}[stream]+`}`)
			require.Equal(t, http.StatusOK, r.status, r.body)
			var content []anthropic.BetaContentBlockUnion
			if !stream {
				var msg anthropic.BetaMessage
				require.NoError(t, json.Unmarshal([]byte(r.body), &msg))
				content = msg.Content
				assert.Equal(t, anthropic.BetaStopReasonEndTurn, msg.StopReason)
			} else {
				for _, d := range namedData(r.body) {
					if gjson.Get(d, "type").String() != "content_block_start" {
						continue
					}
					var ev anthropic.BetaRawContentBlockStartEvent
					require.NoError(t, json.Unmarshal([]byte(d), &ev))
					assert.Empty(t, ev.JSON.ExtraFields, d)
					var block anthropic.BetaContentBlockUnion
					require.NoError(t, json.Unmarshal([]byte(ev.ContentBlock.RawJSON()), &block))
					content = append(content, block)
				}
			}
			var types []string
			for _, b := range content {
				types = append(types, b.Type)
			}
			want := []string{"mcp_tool_use", "mcp_tool_result", "mcp_tool_use", "mcp_tool_result", "text"}
			if stream {
				want = append([]string{"text"}, want...)
			}
			require.Equal(t, want, types)
			off := len(want) - 5
			use := content[off].AsMCPToolUse()
			assert.Empty(t, use.JSON.ExtraFields, use.RawJSON())
			assert.Equal(t, "local", use.ServerName)
			assert.Equal(t, "add", use.Name)
			assert.True(t, strings.HasPrefix(use.ID, "mcptoolu_"))
			res := content[off+1].AsMCPToolResult()
			assert.Empty(t, res.JSON.ExtraFields, res.RawJSON())
			assert.Equal(t, use.ID, res.ToolUseID)
			assert.False(t, res.IsError)
			require.Len(t, res.Content.OfBetaMCPToolResultBlockContent, 1)
			assert.Equal(t, "42", res.Content.OfBetaMCPToolResultBlockContent[0].Text)
			failed := content[off+3].AsMCPToolResult()
			assert.True(t, failed.IsError)
			assert.Equal(t, "remote", content[off+2].AsMCPToolUse().ServerName)

			if !stream {
				// The blocks go back as the assistant's turn: history.
				var msg struct {
					Content json.RawMessage `json:"content"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.body), &msg))
				follow := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"add 2 and 40"},{"role":"assistant","content":`+string(msg.Content)+`},{"role":"user","content":"and now?"}]}`)
				require.Equal(t, http.StatusOK, follow.status, follow.body)
				reqs := s.up.Requests()
				last := upstreamText(reqs[len(reqs)-1])
				assert.Contains(t, last, "42")
				assert.Contains(t, last, "the disk is on fire")
			}
		})
	}
}

package handlers

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// claudeCodeHeaders are the headers Claude Code 2.x sends.
var claudeCodeHeaders = []string{
	"x-api-key", "sk-any", "anthropic-version", "2023-06-01",
	"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
	"x-app", "cli", "x-claude-code-session-id", "00000000-0000-4000-8000-000000000000", "User-Agent", "claude-cli/2.1.0 (external, cli)",
}

// TestClaudeCodeFixtures sends requests shaped like Claude Code's own
// (testdata/gen_claude_code.py writes them) through the gateway unchanged,
// streamed as Claude Code sends them and again without streaming as it
// retries, and checks what the upstream got and what came back.
func TestClaudeCodeFixtures(t *testing.T) {
	for _, name := range []string{"claude_code_first_turn.json", "claude_code_tool_rounds.json"} {
		raw, err := os.ReadFile("testdata/" + name)
		require.NoError(t, err)
		fixture := gjson.ParseBytes(raw)
		for _, streaming := range []bool{true, false} {
			body := string(raw)
			if !streaming {
				body = strings.Replace(body, `"stream": true`, `"stream": false`, 1)
				require.NotEqual(t, string(raw), body)
			}
			t.Run(name+map[bool]string{true: " streaming", false: ""}[streaming], func(t *testing.T) {
				s := newStack(t, nil, script(t, []string{"<thinking>Look at main.go.</thinking>\n", "The server listens on port 8002.\n", "TRIGGER\n", `<invoke name="Read">{"file_path": "/home/dev/project/main.go", "limit": 40}</invoke>`}))
				r := s.do(t, http.MethodPost, "/v1/messages?beta=true", body, claudeCodeHeaders...)
				var content []gjson.Result
				if streaming {
					got := trace(t, claudeEvents(t, r), "claude-sonnet-4-5-20250929")
					require.NotEmpty(t, got)
					assert.Equal(t, "delta tool_use", got[len(got)-2], "%q", got)
					assert.Equal(t, []string{"start", "+thinking@0", "thinking@0:Look at main.go."}, got[:3])
				} else {
					require.Equal(t, http.StatusOK, r.status, r.body)
					msg := gjson.Parse(r.body)
					assert.Equal(t, "tool_use", msg.Get("stop_reason").String())
					assert.Equal(t, "claude-sonnet-4-5-20250929", msg.Get("model").String())
					content = msg.Get("content").Array()
					require.Len(t, content, 3, r.body)
					assert.Equal(t, "thinking", content[0].Get("type").String(), "thinking: adaptive shows the reasoning")
					assert.Equal(t, "Look at main.go.", content[0].Get("thinking").String())
					assert.Equal(t, "The server listens on port 8002.", content[1].Get("text").String())
					assert.Equal(t, "Read", content[2].Get("name").String())
					assert.JSONEq(t, `{"file_path":"/home/dev/project/main.go","limit":40}`, content[2].Get("input").Raw)
				}

				reqs := s.up.Requests()
				require.Len(t, reqs, 1)
				up := reqs[0]
				assert.Equal(t, "anthropic/claude-sonnet-4.6", up.Model, "the dated id resolves by the default aliases")
				system := up.Messages[0]
				require.Equal(t, "system", system.Role)
				fixture.Get("system").ForEach(func(_, b gjson.Result) bool {
					assert.Contains(t, system.Text, b.Get("text").String(), "every system block goes upstream whole")
					return true
				})
				fixture.Get("tools").ForEach(func(_, tool gjson.Result) bool {
					offered := `<function name="` + tool.Get("name").String() + `">`
					if tool.Get("defer_loading").Bool() {
						// As on Anthropic's API: held back until a tool_reference loads it.
						assert.NotContains(t, system.Text, offered, "a deferred tool is not offered")
					} else {
						assert.Contains(t, system.Text, offered, "every other tool is offered")
					}
					return true
				})
				var all strings.Builder
				for _, m := range up.Messages[1:] {
					assert.Contains(t, []string{"user", "assistant"}, m.Role)
					all.WriteString(m.Text + "\n")
				}
				text := all.String()
				assert.Contains(t, text, "<system-reminder>\nThe task list is empty.")
				assert.Contains(t, text, "Find where the server starts")
				if name == "claude_code_tool_rounds.json" {
					for _, want := range []string{
						`<invoke name="Grep">{`,
						`"pattern": "ListenAndServe|net.Listen"`,
						`<tool_result id="toolu_01Fixture0000000000000002" name="Glob">`,
						"File is too large; use offset and limit.",
						`<invoke name="Bash">`,
						"envDefault:\"8002\"",
					} {
						assert.Contains(t, text, want)
					}
					assert.NotContains(t, text, "I should find the main package", "earlier thinking is not replayed")
				}
			})
		}
		t.Run(name+" count_tokens", func(t *testing.T) {
			s := newStack(t, nil, script(t, []string{"unused"}))
			r := s.do(t, http.MethodPost, "/v1/messages/count_tokens?beta=true", string(raw), claudeCodeHeaders...)
			require.Equal(t, http.StatusOK, r.status, r.body)
			n := gjson.Get(r.body, "input_tokens").Int()
			assert.Equal(t, []string{"input_tokens"}, keys(t, gjson.Parse(r.body)))
			t.Logf("%s: %d tokens estimated for a %d-byte body", name, n, len(raw))
			// English prose and JSON run at about four characters a token;
			// the estimate errs high, so it is above len/4 of the text.
			assert.Greater(t, n, int64(len(fixture.Get("system").Raw)/4), "at least the system prompt")
			assert.Less(t, n, int64(len(raw)/2), "but not wildly above the whole body")
		})
	}
}

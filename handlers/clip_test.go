package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestErrorsClipClientStrings sends, to every door, requests whose bad
// value is 20 KB long at each place a door quotes the client's value back.
// The error must still name the field and say what to fix, but quote only
// a bounded part of the value, in the answer and in the access log.
func TestErrorsClipClientStrings(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	long := strings.Repeat("x", 20_000)
	tool := `{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}`
	cases := []struct {
		name, path, body, param string
	}{
		{"openai tool_choice string", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tool_choice":"` + long + `"}`, "tool_choice"},
		{"openai tool_choice type", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[` + tool + `],"tool_choice":{"type":"` + long + `"}}`, "tool_choice.type"},
		{"openai tool_choice name", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[` + tool + `],"tool_choice":{"type":"function","function":{"name":"` + long + `"}}}`, "tool_choice.function.name"},
		{"responses tool_choice string", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi","tool_choice":"` + long + `"}`, "tool_choice"},
		{"responses tool_choice type", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi","tool_choice":{"type":"` + long + `"}}`, "tool_choice.type"},
		{"responses tool_choice name", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"` + long + `"}}`, "tool_choice.name"},
		{"responses role", "/v1/responses", `{"model":"claude-sonnet-4.6","input":[{"role":"` + long + `","content":"hi"}]}`, "input[0].role"},
		{"responses format", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi","text":{"format":{"type":"` + long + `"}}}`, "text.format.type"},
		{"anthropic role", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"` + long + `","content":"hi"}]}`, "messages.0.role"},
		{"anthropic tool_choice type", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"` + long + `"}}`, "tool_choice.type"},
		{"anthropic tool_choice name", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"` + long + `"}}`, "tool_choice.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, r.body)
			msg := gjson.Get(r.body, "error.message").String()
			assert.Contains(t, msg, "xxxx", "the value is quoted")
			assert.Less(t, len(msg), 400, "but clipped: %s", msg)
			if p := gjson.Get(r.body, "error.param"); p.Exists() {
				assert.Equal(t, tc.param, p.String())
			}
		})
	}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		assert.Less(t, len(line), 2000, "a log line quotes a bounded part of the client's value: %.300s", line)
	}
}

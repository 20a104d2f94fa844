package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// agentTools is the tool set of a Roo Code / Kilo Code / Cline session,
// without its turn-ending tool.
const agentTools = `"tools":[` +
	`{"type":"function","function":{"name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},` +
	`{"type":"function","function":{"name":"list_files","description":"List a directory","parameters":{"type":"object","properties":{"path":{"type":"string"},"recursive":{"type":"boolean"}},"required":["path"]}}},` +
	`{"type":"function","function":{"name":"execute_command","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}`

// attemptCompletion is the turn-ending tool those agents always declare.
const attemptCompletion = `,{"type":"function","function":{"name":"attempt_completion","description":"Present the result","parameters":{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}}}`

func agentRequest(stream bool, turnEnding bool) string {
	tools := agentTools
	if turnEnding {
		tools += attemptCompletion
	}
	body := `{"model":"claude-sonnet-4.6","tool_choice":"auto","messages":[` +
		`{"role":"system","content":"You are an agent. Use a tool in every reply."},` +
		`{"role":"user","content":"<task>Summarise the project</task>"}],` + tools + `]`
	if stream {
		body += `,"stream":true`
	}
	return body + "}"
}

// proseFirst is a model that answers in prose, then calls when reminded.
var proseFirst = [][]string{
	{"I'll start by looking ", "at the project files."},
	{"TRIGGER\n", `<invoke name="list_files">{"path":"."}</invoke>`},
}

func TestKnownAgentsGetStrictModeWithoutSettings(t *testing.T) {
	cases := []struct {
		name       string
		header     []string
		turnEnding bool
		rule       string
	}{
		{"Roo Code", []string{"User-Agent", "RooCode/3.25.4", "X-Title", "Roo Code", "HTTP-Referer", "https://github.com/RooVetGit/Roo-Cline"}, true, "known agent roocode"},
		{"Kilo Code", []string{"User-Agent", "Kilo-Code/4.85.0", "X-Title", "Kilo Code", "HTTP-Referer", "https://kilocode.ai"}, true, "known agent kilocode"},
		{"Cline", []string{"User-Agent", "Cline/3.26.1", "X-Title", "Cline", "HTTP-Referer", "https://cline.bot"}, true, "known agent cline"},
		{"by X-Title alone", []string{"User-Agent", "node-fetch", "X-Title", "Roo Code"}, false, "known agent roocode"},
		{"by Referer alone", []string{"User-Agent", "axios/1.7", "HTTP-Referer", "https://kilocode.ai/"}, false, "known agent kilocode"},
		{"an unknown client with attempt_completion", []string{"User-Agent", "my-agent/1.0"}, true, "turn-ending tool attempt_completion"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				s := newStack(t, nil, script(t, proseFirst...))
				r := s.chat(t, agentRequest(stream, tc.turnEnding), tc.header...)
				var calls []streamedCall
				var text string
				if stream {
					out := checkStream(t, r, sonnet)
					calls, text = out.Calls, out.Text
					assert.Equal(t, "tool_calls", out.Finish)
				} else {
					require.Equal(t, http.StatusOK, r.status, r.body)
					msg := gjson.Get(r.body, "choices.0.message")
					for _, c := range msg.Get("tool_calls").Array() {
						calls = append(calls, streamedCall{ID: c.Get("id").String(), Name: c.Get("function.name").String(), Arguments: c.Get("function.arguments").String()})
					}
					text = msg.Get("content").String()
					assert.Equal(t, "tool_calls", gjson.Get(r.body, "choices.0.finish_reason").String())
				}
				require.Len(t, calls, 1, "exactly one tool call: %s", r.body)
				assert.Equal(t, "list_files", calls[0].Name)
				assert.Equal(t, map[string]any{"path": "."}, jsonArgs(t, calls[0].Arguments))
				assert.Empty(t, text, "the prose turn was held back and discarded")
				assert.Len(t, s.up.Requests(), 2, "asked once more with a reminder")
				assert.Equal(t, 1, strings.Count(s.logs.String(), "strict tool mode"), "one log line says which rule fired")
				assert.Contains(t, s.logs.String(), `rule="`+tc.rule+`"`)
			})
		}
	}
}

func TestGenericClientsStreamLive(t *testing.T) {
	s := newStack(t, nil, script(t, proseFirst...))
	out := checkStream(t, s.chat(t, agentRequest(true, false), "User-Agent", "OpenAI/Go 3.9.0"), sonnet)
	assert.Equal(t, "I'll start by looking at the project files.", out.Text, "prose streams as it comes")
	assert.Empty(t, out.Calls)
	assert.Equal(t, "stop", out.Finish)
	assert.Len(t, s.up.Requests(), 1, "no retry")
	assert.NotContains(t, s.logs.String(), "strict tool mode")

	// KILO_TOOL_STRICT=false turns the rules off; true turns strict on for all.
	s = newStack(t, map[string]string{"KILO_TOOL_STRICT": "false"}, script(t, proseFirst...))
	out = checkStream(t, s.chat(t, agentRequest(true, true), "User-Agent", "RooCode/3.25.4"), sonnet)
	assert.Empty(t, out.Calls)
	assert.Len(t, s.up.Requests(), 1)
	s = newStack(t, map[string]string{"KILO_TOOL_STRICT": "true"}, script(t, proseFirst...))
	out = checkStream(t, s.chat(t, agentRequest(true, false)), sonnet)
	require.Len(t, out.Calls, 1)
	assert.Contains(t, s.logs.String(), `rule="KILO_TOOL_STRICT=true"`)
}

// TestStreamedCallsAreNeverBrokenOnTheWire replays the broken calls a
// generic client used to receive as tool_calls with invalid arguments.
func TestStreamedCallsAreNeverBrokenOnTheWire(t *testing.T) {
	good := []string{"TRIGGER\n", `<invoke name="get_weather">{"city":"Paris"}</invoke>`}
	cases := []struct {
		name     string
		turns    [][]string
		env      map[string]string
		wantArgs map[string]any // nil: no call
		wantText string         // in the content
		requests int
	}{
		{"unquoted value: asked again", [][]string{{"TRIGGER\n", `<invoke name="get_weather">{"city": Paris}</invoke>`}, good}, nil,
			map[string]any{"city": "Paris"}, "", 2},
		{"cut off by the end of the stream: asked again", [][]string{{"TRIGGER\n", `<invoke name="get_weather">{"city":"Par`}, good}, nil,
			map[string]any{"city": "Paris"}, "", 2},
		{"a number as a string: coerced", [][]string{{"TRIGGER\n", `<invoke name="get_weather">{"city":"Paris",`, `"days":"7"}</invoke>`}}, nil,
			map[string]any{"city": "Paris", "days": float64(7)}, "", 1},
		{"broken twice: visible text, no call", [][]string{{"TRIGGER\n", `<invoke name="get_weather">{"city": Paris}</invoke>`}}, nil,
			nil, "was not sent", 2},
		{"broken after text was sent: visible text, no retry", [][]string{{"Checking.\n", "TRIGGER\n", `<invoke name="get_weather">{"city": Paris}</invoke>`}, good}, nil,
			nil, "Checking.", 1},
		{"a large call streams; broken, it is no call", [][]string{{"TRIGGER\n", `<invoke name="get_weather">{"city":"` + strings.Repeat("x", 80), `", "days": "many"}</invoke>`}},
			map[string]string{"STREAM_ARGS_AFTER": "32"}, nil, "above is incomplete and must not be run", 1},
		{"Claude's native format", [][]string{{"Let me check.\n\n<function_calls>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">2</parameter>\n</invoke>\n</function_calls>"}}, nil,
			map[string]any{"city": "Paris", "days": float64(2)}, "Let me check.", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, tc.env, script(t, tc.turns...))
			out := checkStream(t, s.chat(t, withTools(`"stream":true`)), sonnet)
			assert.Contains(t, out.Text, tc.wantText)
			assert.Len(t, s.up.Requests(), tc.requests)
			if tc.wantArgs == nil {
				assert.Equal(t, "stop", out.Finish, "no valid call was sent")
				for _, c := range out.Calls {
					assert.False(t, gjson.Valid(c.Arguments), "a call on the wire is never runnable JSON when broken: %q", c.Arguments)
				}
				return
			}
			require.Len(t, out.Calls, 1, "one clean call")
			assert.Equal(t, tc.wantArgs, jsonArgs(t, out.Calls[0].Arguments))
			assert.Len(t, out.Calls[0].Fragments, 1, "a small call goes whole")
			assert.Equal(t, "tool_calls", out.Finish)
		})
	}
}

package handlers

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

const (
	sonnet = "claude-sonnet-4.6"

	// userHi is the smallest valid request body.
	userHi = `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`

	// toolsJSON declares two tools, as the "tools" member of a request.
	toolsJSON = `"tools":[` +
		`{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}},` +
		`{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`
)

// withTools is a request for model asking about the weather with toolsJSON
// and the given extra members (each a `"key":value` string).
func withTools(extra ...string) string {
	body := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"Weather in Paris?"}],` + toolsJSON
	for _, e := range extra {
		body += "," + e
	}
	return body + "}"
}

// waitClosed fails the test unless ch is closed (or yields a value) within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %s", what, d)
	}
}

func TestHandlerModelList(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	r := s.do(t, http.MethodGet, "/v1/models", "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"))
	list := gjson.Parse(r.body)
	assert.Equal(t, []string{"data", "object"}, keys(t, list))
	assert.Equal(t, "list", list.Get("object").String())
	var ids []string
	for _, m := range list.Get("data").Array() {
		ids = append(ids, m.Get("id").String())
		assert.Equal(t, "model", m.Get("object").String(), m.Raw)
		assert.Equal(t, gjson.Number, m.Get("created").Type, m.Raw)
		assert.Greater(t, m.Get("created").Int(), int64(1_600_000_000))
		assert.NotEmpty(t, m.Get("owned_by").String(), m.Raw)
	}
	assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking", "gemini-3-flash", "gemini-3-flash-thinking"}, ids,
		"each base model, then its -thinking variant, in the order of MODELS")
	assert.Empty(t, s.up.Requests(), "listing models does not ask the upstream")
}

func TestHandlerHealth(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "secret-key"}, script(t, []string{"unused"}))
	r := s.do(t, http.MethodGet, "/health", "")
	require.Equal(t, http.StatusOK, r.status, "no key needed: %s", r.body)
	assert.JSONEq(t, `{"status":"ok","version":"test-version"}`, r.body)
}

func TestHandlerHealthReportsXIsHuman(t *testing.T) {
	h := New(Options{Version: "v", Logger: slog.New(slog.DiscardHandler),
		XIsHuman: func() any {
			return map[string]any{"mode": "script", "ok": false, "missing": []string{"BroadcastChannel"}}
		}})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.JSONEq(t, `{"status":"ok","version":"v","x_is_human":{"mode":"script","ok":false,"missing":["BroadcastChannel"]}}`, w.Body.String())
}

func TestHandlerAuth(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "key-one,key-two"}, script(t, []string{"hello"}))
	for _, target := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/models", ""},
		{http.MethodPost, "/v1/chat/completions", userHi},
	} {
		t.Run(target.path, func(t *testing.T) {
			cases := []struct {
				name   string
				header []string
				code   string // "" when accepted
			}{
				{"no header", nil, "missing_api_key"},
				{"wrong key", []string{"Authorization", "Bearer key-three"}, "invalid_api_key"},
				{"both keys as one", []string{"Authorization", "Bearer key-one,key-two"}, "invalid_api_key"},
				{"prefix of a key", []string{"Authorization", "Bearer key-"}, "invalid_api_key"},
				{"empty bearer", []string{"Authorization", "Bearer "}, "missing_api_key"},
				{"first key", []string{"Authorization", "Bearer key-one"}, ""},
				{"second key", []string{"Authorization", "Bearer key-two"}, ""},
				{"lower-case scheme", []string{"Authorization", "bearer key-two"}, ""},
				{"x-api-key", []string{"X-Api-Key", "key-one"}, ""},
				{"x-api-key beside another scheme", []string{"Authorization", "Basic dXNlcg==", "X-Api-Key", "key-two"}, ""},
				{"other scheme alone", []string{"Authorization", "Basic key-one"}, "unsupported_auth_scheme"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					before := len(s.up.Requests())
					r := s.do(t, target.method, target.path, target.body, tc.header...)
					if tc.code == "" {
						assert.Equal(t, http.StatusOK, r.status, r.body)
						return
					}
					assertAPIError(t, r, http.StatusUnauthorized, "authentication_error", "", tc.code, "API_KEY")
					assert.Len(t, s.up.Requests(), before, "a refused request never reaches the upstream")
				})
			}
		})
	}
	r := s.do(t, http.MethodGet, "/health", "")
	assert.Equal(t, http.StatusOK, r.status, "/health needs no key")
	assert.NotContains(t, s.logs.String(), "key-one", "keys are never logged")
	assert.NotContains(t, s.logs.String(), "key-three")

	t.Run("without API_KEY", func(t *testing.T) {
		open := newStack(t, nil, script(t, []string{"hello"}))
		r := open.chat(t, userHi)
		assert.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "hello", gjson.Get(r.body, "choices.0.message.content").String())
		r = open.do(t, http.MethodGet, "/v1/models", "", "Authorization", "Bearer anything")
		assert.Equal(t, http.StatusOK, r.status, "a key is ignored when none is configured")
	})
}

func TestHandlerRequestErrors(t *testing.T) {
	s := newStack(t, map[string]string{"MAX_BODY_BYTES": "2048"}, script(t, []string{"never sent"}))
	cases := []struct {
		name        string
		body        string
		status      int
		param, code string
		hints       []string
	}{
		{"invalid JSON", `{"model":"claude-sonnet-4.6","messages":[`, 400, "", "", []string{"not valid JSON"}},
		{"not an object", `"hello"`, 400, "", "", []string{"object"}},
		{"messages as a string", `{"model":"claude-sonnet-4.6","messages":"hi"}`, 400, "messages", "", []string{"messages", "array"}},
		{"stream as an object", `{"model":"claude-sonnet-4.6","stream":{},"messages":[{"role":"user","content":"hi"}]}`, 400, "stream", "", []string{"stream", "boolean"}},
		{"unknown model", `{"model":"llama-nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found",
			[]string{`"llama-nope"`, "claude-sonnet-4.6", "gemini-3-flash-thinking"}},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "", []string{"model is required", "/v1/models"}},
		{"duplicate tool names", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[` +
			`{"type":"function","function":{"name":"read_file"}},{"type":"function","function":{"name":"read_file"}}]}`,
			400, "tools[1].function.name", "", []string{"read_file", "unique"}},
		{"tool of a bad type", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[` +
			`{"type":"code_interpreter","function":{"name":"run"}}]}`,
			400, "tools[0].type", "", []string{"code_interpreter", `"function"`}},
		{"tool without a name", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`,
			400, "tools[0].function.name", "", []string{"required"}},
		{"tool with a bad name", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"read file"}}]}`,
			400, "tools[0].function.name", "", []string{"read file", "letters"}},
		{"bad tool_choice", withTools(`"tool_choice":"sometimes"`), 400, "tool_choice", "", []string{"sometimes", `"auto"`, `"required"`}},
		{"tool_choice of a missing function", withTools(`"tool_choice":{"type":"function","function":{"name":"delete_all"}}`),
			400, "tool_choice.function.name", "", []string{"delete_all", "not in tools"}},
		{"body over MAX_BODY_BYTES", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"` + strings.Repeat("a", 3000) + `"}]}`,
			413, "", "request_too_large", []string{"2048", "MAX_BODY_BYTES"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.chat(t, tc.body)
			assertAPIError(t, r, tc.status, "invalid_request_error", tc.param, tc.code, tc.hints...)
			assert.Regexp(t, `^req_`, r.header.Get("X-Request-Id"), "errors carry the request id too")
		})
	}
	assert.Empty(t, s.up.Requests(), "no invalid request reaches the upstream")

	t.Run("unknown route", func(t *testing.T) {
		r := s.do(t, http.MethodGet, "/v1/engines", "")
		assertAPIError(t, r, http.StatusNotFound, "invalid_request_error", "", "not_found", "/v1/engines", "/v1/chat/completions", "/v1/models")
		r = s.do(t, http.MethodPost, "/chat/completions", userHi)
		assertAPIError(t, r, http.StatusNotFound, "invalid_request_error", "", "not_found", "/v1/chat/completions")
	})
	t.Run("wrong method", func(t *testing.T) {
		r := s.do(t, http.MethodGet, "/v1/chat/completions", "")
		assertAPIError(t, r, http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed", "GET")
	})
}

func TestHandlerUpstreamErrors(t *testing.T) {
	checkpoint := "<!DOCTYPE html><html><head><title>Vercel Security Checkpoint</title></head><body>checking your browser</body></html>"
	cases := []struct {
		name       string
		env        map[string]string
		resp       cursortest.Response
		status     int
		typ, code  string
		hints      []string
		retryAfter string
		attempts   int // upstream requests per client request
	}{
		{"429 with Retry-After", nil, cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "42"}, Body: checkpoint},
			429, "rate_limit_error", "upstream_rate_limited", []string{"42 seconds", "Vercel Security Checkpoint", "CURSOR_COOKIE"}, "42", 1},
		{"429 without Retry-After", nil, cursortest.Response{Status: 429, Body: checkpoint},
			429, "rate_limit_error", "upstream_rate_limited", []string{"60 seconds"}, "60", 1},
		{"403", nil, cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`},
			502, "api_error", "upstream_forbidden", []string{"Access denied", "x-is-human", "SCRIPT_URL"}, "", 2},
		{"silence", map[string]string{"TIMEOUT": "0.3"}, cursortest.Response{Hang: true},
			504, "api_error", "upstream_timeout", []string{"TIMEOUT"}, "", 1},
		{"silence after some frames", map[string]string{"TIMEOUT": "0.3"}, cursortest.Response{Events: []string{`{"type":"start"}`, `{"type":"start-step"}`}, Hang: true},
			504, "api_error", "upstream_timeout", []string{"TIMEOUT"}, "", 1},
		{"error frame", nil, cursortest.Response{Events: []string{`{"type":"start"}`, `{"type":"error","errorText":"model overloaded"}`}},
			502, "api_error", "upstream_error", []string{"model overloaded"}, "", 1},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			name := tc.name
			if stream {
				name += " streaming"
			}
			t.Run(name, func(t *testing.T) {
				s := newStack(t, tc.env, cursortest.Always(tc.resp))
				body := userHi
				if stream {
					body = `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				}
				start := time.Now()
				r := s.chat(t, body)
				assertAPIError(t, r, tc.status, tc.typ, "", tc.code, tc.hints...)
				assert.Equal(t, tc.retryAfter, r.header.Get("Retry-After"))
				assert.NotContains(t, r.body, "data:", "an error before any output is a plain JSON body")
				assert.Len(t, s.up.Requests(), tc.attempts)
				if tc.env["TIMEOUT"] != "" {
					assert.Less(t, time.Since(start), 5*time.Second, "TIMEOUT bounds the wait")
				}
			})
		}
	}
}

func TestHandlerLenientDecoding(t *testing.T) {
	history := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_a1","content":"rain, 4°C"}`
	cases := []struct {
		name string
		body string
		sent []string // what the upstream must have received
	}{
		{"content as parts with image_url and cache_control", `{"model":"claude-sonnet-4.6","messages":[` +
			`{"role":"system","content":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"user","content":[{"type":"text","text":"What is this?","cache_control":{"type":"ephemeral","ttl":"5m"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}}]}]}`,
			[]string{"Be brief.", "What is this?", "[image omitted: this model accepts text only]"}},
		{"content null with tool_calls, then a tool message", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"Weather in Oslo?"},` + history + `],` + toolsJSON + `}`,
			[]string{`<invoke name="get_weather">{"city":"Oslo"}</invoke>`, `<tool_result id="call_a1" name="get_weather">`, "rain, 4°C"}},
		{"tool call arguments as an object", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_b2","type":"function","function":{"name":"get_weather","arguments":{"city":"Rome"}}}]},` +
			`{"role":"tool","tool_call_id":"call_b2","content":[{"type":"text","text":"sunny"}]}],` + toolsJSON + `}`,
			[]string{`<invoke name="get_weather">{"city":"Rome"}</invoke>`, "sunny"}},
		{"empty content", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"first"},{"role":"assistant","content":""},{"role":"user","content":"second"}]}`,
			[]string{"first", "second"}},
		{"assistant history with reasoning_content", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"2+2?"},` +
			`{"role":"assistant","content":"4","reasoning_content":"simple sum"},{"role":"user","content":"and 3+3?"}]}`,
			[]string{"and 3+3?"}},
		{"assistant history with reasoning_details", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"2+2?"},` +
			`{"role":"assistant","content":"4","reasoning_details":[{"type":"reasoning.text","text":"simple sum","format":"anthropic-claude-v1"}]},{"role":"user","content":"and 3+3?"}]}`,
			[]string{"and 3+3?"}},
		{"parallel_tool_calls", withTools(`"parallel_tool_calls":true`), nil},
		{"stream_options", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"stream":false,"stream_options":{"include_usage":true}}`, nil},
		{"max_tokens and max_completion_tokens", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"max_tokens":4096,"max_completion_tokens":4096}`, nil},
		{"temperature as a string", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"temperature":"0.7","top_p":"1"}`, nil},
		{"unknown extra fields", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi","name":"bob","x_extra":{"a":[1,2]}}],` +
			`"user":"u-1","metadata":{"k":"v"},"seed":7,"n":1,"logprobs":false,"response_format":{"type":"text"},"reasoning_effort":"high","provider":{"order":["x"]},"x_vendor":[null,true]}`, nil},
		{"developer role", `{"model":"claude-sonnet-4.6","messages":[{"role":"developer","content":"Answer in French."},{"role":"user","content":"hi"}]}`,
			[]string{"Answer in French."}},
		{"tool_choice null and none", withTools(`"tool_choice":"none"`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, []string{"ok"}))
			r := s.chat(t, tc.body)
			require.Equal(t, http.StatusOK, r.status, r.body)
			assert.Equal(t, "ok", gjson.Get(r.body, "choices.0.message.content").String())
			reqs := s.up.Requests()
			require.Len(t, reqs, 1)
			var sent strings.Builder
			for _, m := range reqs[0].Messages {
				assert.Contains(t, []string{"system", "user", "assistant"}, m.Role, "the upstream only takes these roles")
				sent.WriteString(m.Text + "\n")
			}
			for _, want := range tc.sent {
				assert.Contains(t, sent.String(), want)
			}
			assert.NotContains(t, sent.String(), "iVBORw0KGgo", "no image data in a text prompt")
			assert.NotContains(t, sent.String(), "simple sum", "earlier reasoning is not replayed")
		})
	}
}

func TestHandlerNonStreamingText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hello", ", ", "world!"}))
	r := s.chat(t, `{"model":"gemini-3-flash","messages":[{"role":"user","content":"Say hello"}]}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"))
	c := gjson.Parse(r.body)
	assert.Equal(t, []string{"choices", "created", "id", "model", "object", "usage"}, keys(t, c))
	assert.Equal(t, "chat.completion", c.Get("object").String())
	assert.Regexp(t, `^chatcmpl-[A-Za-z0-9]+$`, c.Get("id").String())
	assert.Equal(t, "gemini-3-flash", c.Get("model").String(), "the public model name is echoed")
	assert.InDelta(t, time.Now().Unix(), c.Get("created").Int(), 60)
	require.Len(t, c.Get("choices").Array(), 1)
	ch := c.Get("choices.0")
	assert.Equal(t, "0", ch.Get("index").Raw)
	assert.Equal(t, "stop", ch.Get("finish_reason").String())
	msg := ch.Get("message")
	assert.Equal(t, []string{"content", "role"}, keys(t, msg), "no tool_calls or reasoning fields on a text answer")
	assert.Equal(t, "assistant", msg.Get("role").String())
	assert.Equal(t, gjson.String, msg.Get("content").Type)
	assert.Equal(t, "Hello, world!", msg.Get("content").String())
	assert.JSONEq(t, `{"prompt_tokens":321,"completion_tokens":45,"total_tokens":366}`, c.Get("usage").Raw, "usage from the upstream's finish frame")
	require.Len(t, s.up.Requests(), 1)
	assert.Equal(t, "google/gemini-3-flash", s.up.Requests()[0].Model)
}

func TestHandlerNonStreamingToolCall(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"TRIGGER\n", `<invoke name="get_weather">{"city": "Paris",`, ` "days": 3}</invoke>`}))
	r := s.chat(t, withTools())
	require.Equal(t, http.StatusOK, r.status, r.body)
	c := gjson.Parse(r.body)
	assert.Equal(t, "chat.completion", c.Get("object").String())
	assert.Regexp(t, `^chatcmpl-`, c.Get("id").String())
	assert.Equal(t, sonnet, c.Get("model").String())
	ch := c.Get("choices.0")
	assert.Equal(t, "tool_calls", ch.Get("finish_reason").String())
	msg := ch.Get("message")
	assert.Equal(t, "assistant", msg.Get("role").String())
	require.True(t, msg.Get("content").Exists(), "content is present")
	assert.Equal(t, "null", msg.Get("content").Raw, "content is JSON null when the turn holds only tool calls")
	calls := msg.Get("tool_calls").Array()
	require.Len(t, calls, 1, r.body)
	call := calls[0]
	assert.Equal(t, []string{"function", "id", "type"}, keys(t, call), "no index in a non-streamed call")
	assert.Regexp(t, `^call_[A-Za-z0-9]+$`, call.Get("id").String())
	assert.Equal(t, "function", call.Get("type").String())
	assert.Equal(t, "get_weather", call.Get("function.name").String())
	require.Equal(t, gjson.String, call.Get("function.arguments").Type, "arguments is a JSON string")
	assert.Equal(t, map[string]any{"city": "Paris", "days": float64(3)}, jsonArgs(t, call.Get("function.arguments").String()))
	assert.JSONEq(t, `{"prompt_tokens":321,"completion_tokens":45,"total_tokens":366}`, c.Get("usage").Raw)
	assert.NotContains(t, r.body, "<<CALL_")
	assert.NotContains(t, r.body, "invoke")

	// The system message taught the protocol with the trigger used.
	sys := s.up.Requests()[0].Messages[0]
	assert.Equal(t, "system", sys.Role)
	assert.Contains(t, sys.Text, `<function name="get_weather">`)
	assert.Contains(t, sys.Text, `<function name="read_file">`)
}

func TestHandlerStreamText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hel", "lo, ", "wor", "ld! <b>bold</b> & \"quoted\"\n", "é😀"}))
	r := s.chat(t, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	out := checkStream(t, r, sonnet)
	assert.Equal(t, "Hello, world! <b>bold</b> & \"quoted\"\né😀", out.Text)
	assert.Equal(t, "stop", out.Finish)
	assert.Empty(t, out.Calls)
	assert.Nil(t, out.Usage, "no usage without stream_options.include_usage")
	assert.NotContains(t, r.body, `"usage"`)
	assert.Nil(t, out.Error)
	assert.Greater(t, out.Chunks, 2)
}

func TestHandlerStreamUsage(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hi ", "there."}))
	for _, tc := range []struct {
		options string
		usage   bool
	}{
		{`,"stream_options":{"include_usage":true}`, true},
		{`,"stream_options":{"include_usage":false}`, false},
		{`,"stream_options":{}`, false},
		{``, false},
	} {
		t.Run(tc.options, func(t *testing.T) {
			r := s.chat(t, `{"model":"claude-sonnet-4.6-thinking","stream":true,"messages":[{"role":"user","content":"hi"}]`+tc.options+`}`)
			out := checkStream(t, r, "claude-sonnet-4.6-thinking")
			assert.Equal(t, "Hi there.", out.Text)
			assert.Equal(t, "stop", out.Finish)
			if !tc.usage {
				assert.Nil(t, out.Usage)
				assert.NotContains(t, r.body, `"usage"`)
				return
			}
			require.NotNil(t, out.Usage, "a usage chunk")
			assert.JSONEq(t, `{"prompt_tokens":321,"completion_tokens":45,"total_tokens":366}`, out.Usage.Raw)
			payloads := sseData(t, r.body)
			last := gjson.Parse(payloads[len(payloads)-1])
			assert.True(t, last.Get("usage").Exists(), "the usage chunk is the last before [DONE]")
			assert.Equal(t, "stop", gjson.Get(payloads[len(payloads)-2], "choices.0.finish_reason").String(), "right after the finish chunk")
		})
	}
}

func TestHandlerStreamToolCalls(t *testing.T) {
	cases := []struct {
		name   string
		deltas []string
		chop   int // > 0: the joined deltas arrive in pieces of this many bytes
		text   string
		calls  []streamedCall // IDs are not compared
	}{
		{"one call after text", []string{"Let me ", "check.\n", "TRIGGER\n<invoke name=\"get_weather\">", `{"city":"Paris"}`, "</invoke>"},
			0, "Let me check.\n", []streamedCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{"two parallel calls", []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":", "\"Paris\"}</invoke>\n<invoke name=\"read_file\">", `{"path":"/tmp/a b.txt"}</invoke>`},
			0, "", []streamedCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "read_file", Arguments: `{"path":"/tmp/a b.txt"}`}}},
		{"markup cut into 3-byte deltas", []string{"Sure, <b>both</b>.\nTRIGGER\n<invoke name=\"read_file\">{\"path\":\"x\"}</invoke>\n<invoke name=\"get_weather\">{\"city\":\"Zürich\"}</invoke>"},
			3, "Sure, <b>both</b>.\n", []streamedCall{{Name: "read_file", Arguments: `{"path":"x"}`}, {Name: "get_weather", Arguments: `{"city":"Zürich"}`}}},
	}
	for _, tc := range cases {
		for _, usage := range []bool{false, true} {
			name := tc.name
			if usage {
				name += " with usage"
			}
			t.Run(name, func(t *testing.T) {
				s := newStack(t, nil, script(t, tc.deltas))
				if tc.chop > 0 {
					s = newStack(t, nil, chopped(t, tc.chop, strings.Join(tc.deltas, "")))
				}
				extra := []string{`"stream":true`}
				if usage {
					extra = append(extra, `"stream_options":{"include_usage":true}`)
				}
				r := s.chat(t, withTools(extra...))
				out := checkStream(t, r, sonnet)
				assert.Equal(t, "tool_calls", out.Finish)
				assert.Equal(t, tc.text, out.Text)
				require.Len(t, out.Calls, len(tc.calls))
				ids := map[string]bool{}
				for i, want := range tc.calls {
					got := out.Calls[i]
					assert.Equal(t, want.Name, got.Name, "call %d", i)
					assert.JSONEq(t, want.Arguments, got.Arguments, "call %d", i)
					assert.False(t, ids[got.ID], "call ids are unique")
					ids[got.ID] = true
				}
				assert.Equal(t, usage, out.Usage != nil)
				if usage {
					assert.Positive(t, out.Usage.Get("total_tokens").Int())
				} else {
					assert.NotContains(t, r.body, `"usage"`)
				}
			})
		}
	}
}

func TestHandlerStreamsToolArguments(t *testing.T) {
	// STREAM_ARGS_AFTER=0 streams every call at once, as large ones do.
	streamAtOnce := map[string]string{"STREAM_ARGS_AFTER": "0"}
	t.Run("pieces as the upstream sends them", func(t *testing.T) {
		// Paced, so that the pieces arrive apart: pieces that arrive
		// together are merged into one (one event per read).
		answer := script(t, []string{"Reading.\n", "TRIGGER\n<invoke name=\"read_file\">{\"path\":", " \"/very/long/", "path/to/file.go\"", "\n}", "</invoke>"})
		s := newStack(t, streamAtOnce, func(n int, req cursortest.Request) cursortest.Response {
			r := answer(n, req)
			r.Delay = 40 * time.Millisecond
			return r
		})
		out := checkStream(t, s.chat(t, withTools(`"stream":true`)), sonnet)
		require.Len(t, out.Calls, 1)
		assert.Equal(t, `{"path":"/very/long/path/to/file.go"}`, out.Calls[0].Arguments)
		assert.Greater(t, len(out.Calls[0].Fragments), 1, "the arguments stream in pieces")
		// Every fragment ends where an upstream piece ended.
		ends := map[int]bool{}
		at := 0
		for _, piece := range []string{`{"path":`, `"/very/long/`, `path/to/file.go"`, `}`} {
			at += len(piece)
			ends[at] = true
		}
		at = 0
		for _, f := range out.Calls[0].Fragments {
			at += len(f)
			assert.True(t, ends[at], "fragment %q ends inside an upstream piece", f)
		}
		assert.Equal(t, "tool_calls", out.Finish)
	})
	t.Run("strict mode holds the call and sends it whole", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":", " \"a.go\"}", "</invoke>"}))
		out := checkStream(t, s.chat(t, withTools(`"stream":true`, `"tool_choice":"required"`)), sonnet)
		require.Len(t, out.Calls, 1)
		assert.Equal(t, []string{`{"path":"a.go"}`}, out.Calls[0].Fragments)
	})
	t.Run("against the schema: never completed", func(t *testing.T) {
		s := newStack(t, streamAtOnce, script(t, []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":", " 75001}", "</invoke>"}))
		out := checkStream(t, s.chat(t, withTools(`"stream":true`)), sonnet)
		require.Len(t, out.Calls, 1)
		assert.Equal(t, `{"city":75001`, out.Calls[0].Arguments, "no client can parse, so none runs it")
		assert.Contains(t, out.Text, "call of get_weather above is incomplete and must not be run")
		assert.Contains(t, out.Text, "city", "the note says what is wrong")
		assert.Len(t, s.up.Requests(), 1)
	})
}

func TestHandlerStreamErrorAfterOutput(t *testing.T) {
	s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
		`{"type":"start"}`, `{"type":"start-step"}`, `{"type":"text-start","id":"t0"}`,
		`{"type":"text-delta","id":"t0","delta":"A partial "}`, `{"type":"text-delta","id":"t0","delta":"answer"}`,
		`{"type":"error","errorText":"model overloaded"}`,
	}}))
	r := s.chat(t, `{"model":"claude-sonnet-4.6","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, r.status, "the status was sent with the first bytes")
	out := checkStream(t, r, sonnet)
	assert.Equal(t, "A partial answer", out.Text, "the text streamed before the error")
	require.NotNil(t, out.Error, "an error chunk: %s", r.body)
	assertErrorObject(t, *out.Error, "api_error", "", "upstream_error", "model overloaded")
	assert.Empty(t, out.Finish, "no finish chunk")
	assert.Nil(t, out.Usage, "no usage chunk after an error")
	assert.True(t, strings.HasSuffix(r.body, "data: [DONE]\n\n"))
}

func TestHandlerStreamErrorBeforeOutput(t *testing.T) {
	// Frames without text, then an error: nothing was sent, so the client
	// gets the real status.
	s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
		`{"type":"start"}`, `{"type":"start-step"}`, `{"type":"text-start","id":"t0"}`,
		`{"type":"error","errorText":"internal failure"}`,
	}}))
	r := s.chat(t, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	assertAPIError(t, r, http.StatusBadGateway, "api_error", "", "upstream_error", "internal failure")
	assert.NotEqual(t, "no", r.header.Get("X-Accel-Buffering"), "not a stream")
}

func TestHandlerRequiredToolRetry(t *testing.T) {
	turns := [][]string{
		{"I would rather ", "just answer: it is sunny."},
		{"TRIGGER\n", `<invoke name="get_weather">{"city":"Paris"}</invoke>`},
	}
	t.Run("non-streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turns...))
		r := s.chat(t, withTools(`"tool_choice":"required"`))
		require.Equal(t, http.StatusOK, r.status, r.body)
		msg := gjson.Get(r.body, "choices.0.message")
		assert.Equal(t, "null", msg.Get("content").Raw, "the first reply is discarded")
		require.Len(t, msg.Get("tool_calls").Array(), 1, r.body)
		assert.Equal(t, "get_weather", msg.Get("tool_calls.0.function.name").String())
		assert.Equal(t, map[string]any{"city": "Paris"}, jsonArgs(t, msg.Get("tool_calls.0.function.arguments").String()))
		assert.Equal(t, "tool_calls", gjson.Get(r.body, "choices.0.finish_reason").String())
		reqs := s.up.Requests()
		require.Len(t, reqs, 2, "the upstream was asked exactly twice")
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		assert.Contains(t, last.Text, "MUST call a function", "the second request says what was wrong")
		assert.Contains(t, last.Text, sentTrigger(reqs[1]))
	})
	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turns...))
		r := s.chat(t, withTools(`"tool_choice":"required"`, `"stream":true`))
		out := checkStream(t, r, sonnet)
		assert.Empty(t, out.Text, "the discarded first reply never streams")
		require.Len(t, out.Calls, 1)
		assert.Equal(t, "get_weather", out.Calls[0].Name)
		assert.Equal(t, "tool_calls", out.Finish)
		assert.Len(t, s.up.Requests(), 2)
	})
}

func TestHandlerClientDisconnect(t *testing.T) {
	hang := func(arrived chan<- struct{}) func(int, cursortest.Request) cursortest.Response {
		return func(int, cursortest.Request) cursortest.Response {
			select {
			case arrived <- struct{}{}:
			default:
			}
			return cursortest.Response{Events: []string{
				`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"first words"}`,
			}, Hang: true}
		}
	}

	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, nil, hang(make(chan struct{}, 1)))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(line, "data: {"), "the first chunk: %q", line)
		assert.Equal(t, `{"role":"assistant","content":""}`, gjson.Get(strings.TrimPrefix(line, "data: "), "choices.0.delta").Raw)
		select {
		case <-s.up.Canceled():
			t.Fatal("the upstream request ended before the client left")
		default:
		}
		cancel()
		waitClosed(t, s.up.Canceled(), 5*time.Second, "cancelling the upstream request after the client left")
		s.Close() // waits for the handler to return
		assert.Contains(t, s.logs.String(), "status=499", "the access log records the client leaving")
	})

	t.Run("non-streaming", func(t *testing.T) {
		arrived := make(chan struct{}, 1)
		s := newStack(t, nil, hang(arrived))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(userHi))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		errc := make(chan error, 1)
		go func() {
			resp, err := s.Client().Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		waitClosed(t, arrived, 5*time.Second, "the upstream request")
		select {
		case err := <-errc:
			t.Fatalf("the gateway answered while the upstream was still silent: %v", err)
		default:
		}
		cancel()
		waitClosed(t, s.up.Canceled(), 5*time.Second, "cancelling the upstream request after the client left")
		select {
		case err := <-errc:
			assert.True(t, errors.Is(err, context.Canceled), "the client saw its own cancellation: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("the client request did not return")
		}
		s.Close() // waits for the handler to return
		assert.Contains(t, s.logs.String(), "status=499", "the access log records the client leaving")
	})
}

func TestHandlerRequestID(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"ok"}))
	r := s.chat(t, userHi, "X-Request-Id", "trace-0a1b.2c:3d")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "trace-0a1b.2c:3d", r.header.Get("X-Request-Id"), "a sane id is echoed")

	r = s.chat(t, userHi)
	first := r.header.Get("X-Request-Id")
	assert.Regexp(t, `^req_[A-Za-z0-9]{20}$`, first, "one is generated when none is sent")
	r = s.chat(t, userHi)
	assert.Regexp(t, `^req_[A-Za-z0-9]{20}$`, r.header.Get("X-Request-Id"))
	assert.NotEqual(t, first, r.header.Get("X-Request-Id"), "generated ids differ")

	r = s.chat(t, userHi, "X-Request-Id", "evil\tid with spaces")
	assert.Regexp(t, `^req_[A-Za-z0-9]{20}$`, r.header.Get("X-Request-Id"), "an unsafe id is replaced")

	r = s.chat(t, `{"stream":true,"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, "X-Request-Id", "stream-7")
	checkStream(t, r, sonnet)
	assert.Equal(t, "stream-7", r.header.Get("X-Request-Id"), "also on streams")
	s.logs.Await(t, "request_id=stream-7") // the access log ties the id to the request
}

package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// post sends a chat completion body and returns the response and its body.
func post(t *testing.T, g *gateway, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

const hello = `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`

func TestModelsAndHealth(t *testing.T) {
	g := newGateway(t, map[string]string{"API_KEY": "k1"}, replyWith("x"))
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "list", gjson.GetBytes(body, "object").String())
	var ids []string
	for _, m := range gjson.GetBytes(body, "data").Array() {
		ids = append(ids, m.Get("id").String())
		assert.Equal(t, "model", m.Get("object").String())
	}
	assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking", "gemini-3-flash", "gemini-3-flash-thinking"}, ids)

	resp, err = http.Get(g.URL + "/health") // no key needed
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, `{"status":"ok","version":"test"}`, string(body))
}

func TestAuth(t *testing.T) {
	g := newGateway(t, map[string]string{"API_KEY": "key-one, key-two"}, replyWith("ok"))
	cases := []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no key", nil, 401, "missing_api_key"},
		{"wrong key", []string{"Authorization", "Bearer nope"}, 401, "invalid_api_key"},
		{"wrong scheme", []string{"Authorization", "Basic key-one"}, 401, "missing_api_key"},
		{"first key", []string{"Authorization", "Bearer key-one"}, 200, ""},
		{"second key", []string{"Authorization", "Bearer key-two"}, 200, ""},
		{"x-api-key", []string{"X-Api-Key", "key-two"}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, hello, tc.header...)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			if tc.code != "" {
				assert.Equal(t, "authentication_error", gjson.Get(body, "error.type").String())
				assert.Equal(t, tc.code, gjson.Get(body, "error.code").String())
				assert.Contains(t, gjson.Get(body, "error.message").String(), "API_KEY", "the message says what to fix")
			}
		})
	}
	t.Run("no API_KEY means no auth", func(t *testing.T) {
		open := newGateway(t, nil, replyWith("ok"))
		resp, body := post(t, open, hello)
		assert.Equal(t, 200, resp.StatusCode, body)
	})
}

func TestRequestErrors(t *testing.T) {
	g := newGateway(t, map[string]string{"MAX_BODY_BYTES": "2048"}, replyWith("never"))
	cases := []struct {
		name, body  string
		status      int
		param, code string
		msgContains string
	}{
		{"invalid JSON", `{"model":`, 400, "", "", "not valid JSON"},
		{"messages as a string", `{"model":"claude-sonnet-4.6","messages":"hi"}`, 400, "messages", "", "messages"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", "", "model is required"},
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found", "claude-sonnet-4.6"},
		{"no messages", `{"model":"claude-sonnet-4.6","messages":[]}`, 400, "messages", "", "at least one"},
		{"bad role", `{"model":"claude-sonnet-4.6","messages":[{"role":"robot","content":"hi"}]}`, 400, "messages[0].role", "", "robot"},
		{"duplicate tools", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]}`, 400, "tools[1].function.name", "", "unique"},
		{"non-function tool", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"retrieval","function":{"name":"a"}}]}`, 400, "tools[0].type", "", "function"},
		{"bad tool name", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, 400, "tools[0].function.name", "", "letters"},
		{"unknown tool_choice", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],` + weatherTools + `,"tool_choice":"always"}`, 400, "tool_choice", "", "auto"},
		{"tool_choice names a missing function", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, 400, "tool_choice.function.name", "", "nope"},
		{"required without tools", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, 400, "tool_choice", "", "at least one tool"},
		{"body too large", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, 413, "", "request_too_large", "MAX_BODY_BYTES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, g, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			assert.Equal(t, "invalid_request_error", gjson.Get(body, "error.type").String(), body)
			if tc.param == "" {
				assert.Equal(t, gjson.Null, gjson.Get(body, "error.param").Type, body)
			} else {
				assert.Equal(t, tc.param, gjson.Get(body, "error.param").String(), body)
			}
			if tc.code != "" {
				assert.Equal(t, tc.code, gjson.Get(body, "error.code").String(), body)
			}
			assert.Contains(t, gjson.Get(body, "error.message").String(), tc.msgContains)
		})
	}
	assert.Empty(t, g.upstream.Requests(), "no invalid request reaches the upstream")

	resp, err := http.Get(g.URL + "/v1/nothing")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "not_found", gjson.GetBytes(body, "error.code").String())
}

func TestLenientRequests(t *testing.T) {
	g := newGateway(t, nil, replyWith("fine"))
	body := `{
	  "model": "claude-sonnet-4.6",
	  "messages": [
	    {"role": "system", "content": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]},
	    {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
	    {"role": "assistant", "content": null, "reasoning_content": "hmm", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "cold"},
	    {"role": "assistant", "content": "", "reasoning_details": [{"type": "reasoning.text", "text": "x"}]},
	    {"role": "user", "content": "and now?", "name": "bob"}
	  ],
	  ` + weatherTools + `,
	  "tool_choice": "auto", "parallel_tool_calls": true, "stream_options": {"include_usage": false},
	  "max_tokens": 100, "max_completion_tokens": 100, "temperature": "0.2", "top_p": 1, "user": "u1",
	  "metadata": {"a": "b"}, "some_vendor_field": {"x": [1, 2]}
	}`
	resp, out := post(t, g, body)
	require.Equal(t, 200, resp.StatusCode, out)
	assert.Equal(t, "fine", gjson.Get(out, "choices.0.message.content").String())
	sent := g.upstream.Requests()[0].Messages
	joined := ""
	for _, m := range sent {
		joined += m.Role + ": " + m.Text + "\n"
	}
	assert.Contains(t, joined, "Be brief.")
	assert.Contains(t, joined, "[image_url omitted")
	assert.Contains(t, joined, `<tool_result id="call_1" name="get_weather">`)
	assert.NotContains(t, joined, "hmm", "reasoning of earlier turns is not replayed")
}

func TestNonStreamingShape(t *testing.T) {
	g := newGateway(t, nil, replyWith("TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>"))
	resp, body := post(t, g, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"weather?"}],`+weatherTools+`}`)
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	r := gjson.Parse(body)
	assert.Equal(t, "chat.completion", r.Get("object").String())
	assert.True(t, strings.HasPrefix(r.Get("id").String(), "chatcmpl-"))
	assert.Equal(t, "claude-sonnet-4.6", r.Get("model").String())
	assert.Greater(t, r.Get("created").Int(), int64(1700000000))
	msg := r.Get("choices.0.message")
	assert.Equal(t, "assistant", msg.Get("role").String())
	assert.Equal(t, gjson.Null, msg.Get("content").Type, "content is null with only tool calls")
	assert.True(t, msg.Get("content").Exists())
	call := msg.Get("tool_calls.0")
	assert.True(t, strings.HasPrefix(call.Get("id").String(), "call_"))
	assert.Equal(t, "function", call.Get("type").String())
	assert.Equal(t, "get_weather", call.Get("function.name").String())
	assert.Equal(t, gjson.String, call.Get("function.arguments").Type)
	assert.JSONEq(t, `{"city":"Paris"}`, call.Get("function.arguments").String())
	assert.False(t, call.Get("index").Exists(), "non-streaming calls carry no index")
	assert.Equal(t, "tool_calls", r.Get("choices.0.finish_reason").String())
	assert.EqualValues(t, 120, r.Get("usage.prompt_tokens").Int())
	assert.EqualValues(t, 30, r.Get("usage.completion_tokens").Int())
	assert.EqualValues(t, 150, r.Get("usage.total_tokens").Int())
}

// sseEvents splits a stream body into its events, checking the framing:
// every event is exactly one "data: " line followed by a blank line.
func sseEvents(t *testing.T, body string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), "ends with [DONE]: %q", body[max(0, len(body)-40):])
	var events []string
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if strings.HasPrefix(block, ":") {
			continue // a comment (ping)
		}
		require.True(t, strings.HasPrefix(block, "data: "), "event %q", block)
		require.NotContains(t, block, "\n", "one line per event")
		require.False(t, strings.HasPrefix(block, "event:"))
		events = append(events, strings.TrimPrefix(block, "data: "))
	}
	return events
}

func TestStreamingWireFormat(t *testing.T) {
	reply := []string{"I'll check ", "both.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\":", "\"Paris\"}</invoke>\n<invoke name=\"get_weather\">{\"city\":\"Rome\"}</invoke>"}
	for _, usage := range []bool{false, true} {
		g := newGateway(t, nil, replyWith(reply...))
		opts := ""
		if usage {
			opts = `,"stream_options":{"include_usage":true}`
		}
		resp, body := post(t, g, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"weather?"}],`+weatherTools+opts+`}`)
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
		assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
		assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))

		events := sseEvents(t, body)
		require.Equal(t, "[DONE]", events[len(events)-1])
		chunks := events[:len(events)-1]
		first := gjson.Parse(chunks[0])
		assert.JSONEq(t, `{"role":"assistant","content":""}`, first.Get("choices.0.delta").Raw)
		id, created := first.Get("id").String(), first.Get("created").Int()
		assert.True(t, strings.HasPrefix(id, "chatcmpl-"))

		var text strings.Builder
		finishes := 0
		calls := map[int64]map[string]string{}
		var usageChunks []gjson.Result
		for i, raw := range chunks {
			c := gjson.Parse(raw)
			assert.Equal(t, id, c.Get("id").String(), "chunk %d", i)
			assert.Equal(t, created, c.Get("created").Int())
			assert.Equal(t, "claude-sonnet-4.6", c.Get("model").String())
			assert.Equal(t, "chat.completion.chunk", c.Get("object").String())
			if c.Get("usage").Exists() {
				usageChunks = append(usageChunks, c)
				assert.Equal(t, "[]", c.Get("choices").Raw, "the usage chunk has no choices")
				continue
			}
			fr := c.Get("choices.0.finish_reason")
			require.True(t, fr.Exists(), "finish_reason is present (null) on every chunk")
			if fr.Type != gjson.Null {
				finishes++
				assert.Equal(t, "tool_calls", fr.String())
				assert.Equal(t, "{}", c.Get("choices.0.delta").Raw)
			}
			text.WriteString(c.Get("choices.0.delta.content").String())
			for _, tc := range c.Get("choices.0.delta.tool_calls").Array() {
				idx := tc.Get("index")
				require.Equal(t, gjson.Number, idx.Type, "index is always present")
				if calls[idx.Int()] == nil {
					// First delta of a call: id, type, name, empty arguments.
					assert.True(t, strings.HasPrefix(tc.Get("id").String(), "call_"))
					assert.Equal(t, "function", tc.Get("type").String())
					assert.Equal(t, `""`, tc.Get("function.arguments").Raw)
					calls[idx.Int()] = map[string]string{"name": tc.Get("function.name").String()}
					continue
				}
				assert.False(t, tc.Get("id").Exists(), "id only on the first delta")
				assert.False(t, tc.Get("type").Exists())
				assert.False(t, tc.Get("function.name").Exists())
				calls[idx.Int()]["args"] += tc.Get("function.arguments").String()
			}
		}
		assert.Equal(t, 1, finishes, "finish_reason appears exactly once")
		assert.Equal(t, "I'll check both.\n", text.String())
		require.Len(t, calls, 2)
		assert.Equal(t, "get_weather", calls[0]["name"])
		assert.JSONEq(t, `{"city":"Paris"}`, calls[0]["args"])
		assert.JSONEq(t, `{"city":"Rome"}`, calls[1]["args"])
		for _, mark := range []string{"<<CALL_", "<invoke", "</invoke>"} {
			assert.NotContains(t, text.String(), mark)
		}
		if usage {
			require.Len(t, usageChunks, 1)
			assert.Equal(t, chunks[len(chunks)-1], usageChunks[0].Raw, "usage comes last, after the finish chunk")
			assert.EqualValues(t, 150, usageChunks[0].Get("usage.total_tokens").Int())
		} else {
			assert.Empty(t, usageChunks)
			assert.NotContains(t, body, `"usage"`)
		}
	}
}

func TestStreamingStopReason(t *testing.T) {
	g := newGateway(t, nil, replyWith("just ", "text"))
	_, body := post(t, g, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	events := sseEvents(t, body)
	last := gjson.Parse(events[len(events)-2])
	assert.Equal(t, "stop", last.Get("choices.0.finish_reason").String())
}

func TestUpstreamFailures(t *testing.T) {
	midStreamError := cursortest.Response{Events: []string{
		`{"type":"start"}`, `{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"partial answer"}`,
		`{"type":"error","errorText":"model overloaded"}`,
	}}
	cases := []struct {
		name       string
		env        map[string]string
		resp       cursortest.Response
		stream     bool
		status     int
		errType    string
		retryAfter string
		inStream   bool // the error arrives as a chunk after output
	}{
		{"429 checkpoint", nil, cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "42"}, Body: "<html><title>Vercel Security Checkpoint</title></html>"}, false, 429, "rate_limit_error", "42", false},
		{"403 bot check", nil, cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}, false, 502, "api_error", "", false},
		{"403 bot check streaming", nil, cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}, true, 502, "api_error", "", false},
		{"invalid model", nil, cursortest.Response{Status: 400, Body: `{"error":"Invalid model. Allowed models: google/gemini-3-flash"}`}, false, 400, "invalid_request_error", "", false},
		{"silence", map[string]string{"TIMEOUT": "0.3"}, cursortest.Response{Hang: true}, false, 504, "api_error", "", false},
		{"silence streaming", map[string]string{"TIMEOUT": "0.3"}, cursortest.Response{Hang: true}, true, 504, "api_error", "", false},
		{"error frame after output", nil, midStreamError, true, 200, "api_error", "", true},
		{"error frame non-streaming", nil, midStreamError, false, 502, "api_error", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, tc.env, cursortest.Always(tc.resp))
			body := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]`
			if tc.stream {
				body += `,"stream":true`
			}
			resp, out := post(t, g, body+"}")
			assert.Equal(t, tc.status, resp.StatusCode, out)
			assert.NotContains(t, out, "<html", "upstream HTML is never forwarded")
			if tc.retryAfter != "" {
				assert.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			}
			errJSON := out
			if tc.inStream {
				events := sseEvents(t, out)
				assert.Contains(t, events[1], "partial answer")
				errJSON = events[len(events)-2]
			}
			assert.Equal(t, tc.errType, gjson.Get(errJSON, "error.type").String(), out)
			assert.NotEmpty(t, gjson.Get(errJSON, "error.message").String())
		})
	}
}

func TestRequiredToolRetryOverHTTP(t *testing.T) {
	g := newGateway(t, nil, replySeq([][]string{{"I don't use tools."}, {"TRIGGER<invoke name=\"get_weather\">{\"city\":\"Oslo\"}</invoke>"}}))
	resp, body := post(t, g, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"weather in Oslo"}],`+weatherTools+`,"tool_choice":"required"}`)
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "get_weather", gjson.Get(body, "choices.0.message.tool_calls.0.function.name").String())
	assert.Len(t, g.upstream.Requests(), 2)
}

func TestRequestID(t *testing.T) {
	g := newGateway(t, nil, replyWith("x"))
	resp, _ := post(t, g, hello, "X-Request-Id", "proxy-abc.123")
	assert.Equal(t, "proxy-abc.123", resp.Header.Get("X-Request-Id"))
	resp, _ = post(t, g, hello, "X-Request-Id", "bad id with spaces")
	assert.Regexp(t, `^req_[A-Za-z0-9]{20}$`, resp.Header.Get("X-Request-Id"))
	resp, _ = post(t, g, hello)
	assert.Regexp(t, `^req_[A-Za-z0-9]{20}$`, resp.Header.Get("X-Request-Id"))
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	hang := cursortest.Response{Events: []string{`{"type":"start"}`, `{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"first words"}`}, Hang: true}
	for _, stream := range []bool{true, false} {
		g := newGateway(t, nil, cursortest.Always(hang))
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if stream {
				// Read until the first text arrives, then hang up.
				r := bufio.NewReader(resp.Body)
				for {
					line, err := r.ReadString('\n')
					if err != nil || strings.Contains(line, "first words") {
						break
					}
				}
				cancel()
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
		if !stream {
			require.Eventually(t, func() bool { return len(g.upstream.Requests()) == 1 }, 5*time.Second, 5*time.Millisecond)
			cancel()
		}
		select {
		case <-g.upstream.Canceled():
		case <-time.After(5 * time.Second):
			t.Fatalf("stream=%v: the upstream request was not cancelled after the client left", stream)
		}
		<-done
	}
}

func TestKeepalivePings(t *testing.T) {
	slow := cursortest.Response{Events: cursortest.Frames(nil, nil, []string{"late answer"}), Delay: 400 * time.Millisecond}
	g := newGateway(t, map[string]string{"PING_INTERVAL": "1"}, cursortest.Always(slow))
	start := time.Now()
	resp, body := post(t, g, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, resp.StatusCode)
	elapsed := time.Since(start)
	pings := strings.Count(body, ": ping\n\n")
	assert.GreaterOrEqual(t, pings, 1, "a silent stream gets pings: %q", body)
	assert.LessOrEqual(t, pings, int(elapsed/time.Second)+1, "at most one ping per interval")
	events := sseEvents(t, body)
	var text string
	for _, e := range events[:len(events)-1] {
		text += gjson.Get(e, "choices.0.delta.content").String()
	}
	assert.Equal(t, "late answer", text)
	var errBody map[string]any
	assert.Error(t, json.Unmarshal([]byte(body), &errBody), "a stream, not an error object")
}

func TestStalledStreamPingsThenErrorChunk(t *testing.T) {
	stalled := cursortest.Response{Hang: true}
	g := newGateway(t, map[string]string{"PING_INTERVAL": "1", "TIMEOUT": "2.5"}, cursortest.Always(stalled))
	resp, body := post(t, g, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, 200, resp.StatusCode, "the pings committed the status")
	assert.GreaterOrEqual(t, strings.Count(body, ": ping\n\n"), 2)
	events := sseEvents(t, body)
	require.Len(t, events, 2, "an error chunk then [DONE]: %q", body)
	assert.Equal(t, "upstream_timeout", gjson.Get(events[0], "error.code").String())
	assert.Contains(t, gjson.Get(events[0], "error.message").String(), "TIMEOUT")
}

func TestTurnEndsAtTheCall(t *testing.T) {
	// The model calls the tool, then invents its result and keeps talking;
	// the gateway answers with the call alone and stops the upstream.
	reply := func(_ int, req cursortest.Request) cursortest.Response {
		trigger := triggerRE.FindString(req.Messages[0].Text)
		return cursortest.Response{Events: []string{
			`{"type":"text-start","id":"t"}`,
			`{"type":"text-delta","id":"t","delta":"` + trigger + `\n<invoke name=\"get_weather\">{\"city\":\"Oslo\"}</invoke>"}`,
			`{"type":"text-delta","id":"t","delta":"\n<tool_result>sunny</tool_result> It is sunny."}`,
		}, Hang: true}
	}
	for _, stream := range []string{"false", "true"} {
		g := newGateway(t, nil, reply)
		resp, body := post(t, g, `{"model":"claude-sonnet-4.6","stream":`+stream+`,"messages":[{"role":"user","content":"weather?"}],`+weatherTools+`}`)
		require.Equal(t, 200, resp.StatusCode, body)
		assert.Contains(t, body, `"get_weather"`)
		assert.NotContains(t, body, "sunny", "the made-up result never reaches the client")
		select {
		case <-g.upstream.Canceled():
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream request was not cancelled at the end of the turn")
		}
	}
}

func TestExposeThinking(t *testing.T) {
	reply := []string{"<thinking>2+2 is 4.</thinking>", "\n\nFour."}
	for _, expose := range []bool{false, true} {
		env := map[string]string{"EXPOSE_THINKING": map[bool]string{false: "false", true: "true"}[expose]}
		g := newGateway(t, env, replyWith(reply...))
		_, body := post(t, g, `{"model":"claude-sonnet-4.6-thinking","messages":[{"role":"user","content":"2+2?"}]}`)
		assert.Equal(t, "Four.", gjson.Get(body, "choices.0.message.content").String())
		reasoning := gjson.Get(body, "choices.0.message.reasoning_content")
		assert.Equal(t, expose, reasoning.Exists(), body)
		if expose {
			assert.Equal(t, "2+2 is 4.", reasoning.String())
		}

		_, stream := post(t, g, `{"model":"claude-sonnet-4.6-thinking","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`)
		var content, streamed string
		for _, e := range sseEvents(t, stream) {
			content += gjson.Get(e, "choices.0.delta.content").String()
			streamed += gjson.Get(e, "choices.0.delta.reasoning_content").String()
		}
		assert.Equal(t, "Four.", content)
		if expose {
			assert.Equal(t, "2+2 is 4.", streamed)
		} else {
			assert.Empty(t, streamed)
			assert.NotContains(t, stream, "reasoning_content")
		}
	}
}

func TestParallelToolCallsFalse(t *testing.T) {
	two := "TRIGGER<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke><invoke name=\"get_weather\">{\"city\":\"Rome\"}</invoke>"
	g := newGateway(t, nil, replyWith(two))
	_, body := post(t, g, `{"model":"claude-sonnet-4.6","parallel_tool_calls":false,"messages":[{"role":"user","content":"weather?"}],`+weatherTools+`}`)
	calls := gjson.Get(body, "choices.0.message.tool_calls").Array()
	require.Len(t, calls, 1, body)
	assert.JSONEq(t, `{"city":"Paris"}`, calls[0].Get("function.arguments").String())
	assert.Contains(t, g.upstream.Requests()[0].Messages[0].Text, "at most one function")

	_, body = post(t, g, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"weather?"}],`+weatherTools+`}`)
	assert.Len(t, gjson.Get(body, "choices.0.message.tool_calls").Array(), 2, "parallel calls by default")
}

func TestLoopGuardOverHTTP(t *testing.T) {
	g := newGateway(t, nil, replyWith("should not be asked"))
	round := `{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},{"role":"tool","tool_call_id":"c%d","content":"rain"}`
	var rounds []string
	for i := range 3 {
		rounds = append(rounds, strings.ReplaceAll(round, "%d", string(rune('0'+i))))
	}
	body := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"weather?"},` + strings.Join(rounds, ",") + `],` + weatherTools + `}`
	resp, out := post(t, g, body)
	require.Equal(t, 200, resp.StatusCode, out)
	assert.Contains(t, gjson.Get(out, "choices.0.message.content").String(), "Stopped a tool loop")
	assert.Equal(t, "stop", gjson.Get(out, "choices.0.finish_reason").String())
	assert.Empty(t, g.upstream.Requests(), "the upstream is not asked")
}

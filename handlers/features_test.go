package handlers

import (
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

const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`

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
		trigger := callTriggerRE.FindString(req.Messages[0].Text)
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

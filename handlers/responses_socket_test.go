package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"cursor2api/services/cursortest"
)

// Tests of the Responses door's WebSocket (GET /v1/responses with
// Upgrade: websocket), driven by openai-go's own Responses WebSocket
// client (client.Responses.Connect) and, where a test needs the raw
// socket, by the library that client runs on.

// dialResponses opens the door's WebSocket with openai-go's client.
func dialResponses(t *testing.T, s *stack, key string) *responses.ResponseConnection {
	t.Helper()
	client := openai.NewClient(option.WithBaseURL(s.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := client.Responses.Connect(ctx, responses.ResponseConnectionOptions{}, option.WithHeader("OpenAI-Beta", "responses_websockets=2026-02-06"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// socketTurn sends msg and reads its events up to the last one (a
// terminal response event or an error), each checked to decode as
// openai-go's server event union.
func socketTurn(t *testing.T, conn *responses.ResponseConnection, msg string) []gjson.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, conn.SendRaw(ctx, json.RawMessage(msg)))
	var events []gjson.Result
	for {
		raw, err := conn.RecvRaw(ctx)
		require.NoError(t, err, "events so far: %v", events)
		ev := gjson.ParseBytes(raw)
		events = append(events, ev)
		switch ev.Get("type").String() {
		case "response.completed", "response.failed", "response.incomplete", "error":
			return events
		}
	}
}

func lastEvent(events []gjson.Result) gjson.Result { return events[len(events)-1] }

const wsWeatherTool = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

// TestResponsesSocketCodexSession runs the turns Codex sends on one
// connection, all with store: false: a warm-up (generate: false) with the
// instructions and tools, a turn naming it with only the user's message,
// a tool call, and the call's output alone, naming the turn before (the
// function_call comes from the connection's memory, never resent).
func TestResponsesSocketCodexSession(t *testing.T) {
	s := newStack(t, map[string]string{"ADMIN_KEY": "admin"}, script(t,
		[]string{"Let me look.\nTRIGGER\n", `<invoke name="get_weather">{"city": "Paris"}</invoke>`},
		[]string{"It is sunny in Paris."},
	))
	conn := dialResponses(t, s, "")

	warm := socketTurn(t, conn, `{"type":"response.create","model":"claude-sonnet-4.6","store":false,"generate":false,
		"tools":[`+wsWeatherTool+`],"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a weather bot named Zephyr."}]}]}`)
	done := lastEvent(warm)
	require.Equal(t, "response.completed", done.Get("type").String(), "%v", warm)
	assert.Equal(t, "[]", done.Get("response.output").Raw, "a warm-up answers nothing")
	assert.Empty(t, s.up.Requests(), "and asks no upstream")
	warmID := done.Get("response.id").String()

	first := socketTurn(t, conn, fmt.Sprintf(`{"type":"response.create","model":"claude-sonnet-4.6","store":false,"stream":true,
		"previous_response_id":%q,"tools":[`+wsWeatherTool+`],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]}]}`, warmID))
	done = lastEvent(first)
	require.Equal(t, "response.completed", done.Get("type").String(), "%v", first)
	call := done.Get(`response.output.#(type=="function_call")`)
	require.True(t, call.Exists(), "%s", done.Raw)
	assert.Equal(t, "get_weather", call.Get("name").String())
	assert.JSONEq(t, `{"city":"Paris"}`, call.Get("arguments").String())
	require.Len(t, s.up.Requests(), 1)
	assert.Contains(t, upstreamText(s.up.Requests()[0]), "Zephyr", "the warm-up's input is the history")
	assert.Contains(t, upstreamText(s.up.Requests()[0]), "Weather in Paris?")

	second := socketTurn(t, conn, fmt.Sprintf(`{"type":"response.create","model":"claude-sonnet-4.6","store":false,
		"previous_response_id":%q,"tools":[`+wsWeatherTool+`],"input":[{"type":"function_call_output","call_id":%q,"output":"sunny, 21 C"}]}`,
		done.Get("response.id").String(), call.Get("call_id").String()))
	done = lastEvent(second)
	require.Equal(t, "response.completed", done.Get("type").String(), "%v", second)
	assert.Equal(t, "It is sunny in Paris.", done.Get(`response.output.#(type=="message").content.0.text`).String())
	reqs := s.up.Requests()
	require.Len(t, reqs, 2)
	replay := upstreamText(reqs[1])
	assert.Contains(t, replay, "Zephyr")
	assert.Contains(t, replay, "Weather in Paris?")
	assert.Contains(t, replay, `<invoke name="get_weather">`, "the call, from the connection's memory")
	assert.Contains(t, replay, "sunny, 21 C", "and its result")
	// Each event is one message, numbered as the SSE stream numbers them.
	for i, ev := range second {
		assert.Equal(t, int64(i), ev.Get("sequence_number").Int(), ev.Raw)
	}
	// Nothing was stored: store: false holds for the store.
	assert.Zero(t, s.store.Len())

	require.NoError(t, conn.Close())
	// The connection's own line comes once it closed, after every turn's.
	assert.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "status=101") }, 10*time.Second, 50*time.Millisecond)
	logs := s.logs.String()
	assert.Equal(t, 3, strings.Count(logs, "turn="), "one access line a turn:\n%s", logs)
	assert.Equal(t, 3, strings.Count(logs, "path=/v1/responses model=claude-sonnet-4.6 status=200"), logs)
	// The metrics and the usage ledger count each turn as a request:
	// the two that asked the model, with the upstream's usage.
	metrics := s.do(t, http.MethodGet, "/metrics", "").body
	assert.Contains(t, metrics, `cursor2api_requests_total{door="responses",model="claude-sonnet-4.6",status="200"} 3`)
	s.ledger.Flush(context.Background())
	status, page := s.get(t, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1d", time.Now().Add(-time.Hour).Unix()), "admin")
	require.Equal(t, http.StatusOK, status, page.Raw)
	assert.EqualValues(t, 2, page.Get("data.0.results.0.num_model_requests").Int(), page.Raw)
	assert.EqualValues(t, 2*defaultUsage.Input, page.Get("data.0.results.0.input_tokens").Int(), page.Raw)
}

// rawDial opens the door's WebSocket with the library openai-go's client
// runs on, for what that client hides (the refused upgrade's body, close
// codes).
func rawDial(t *testing.T, s *stack, header http.Header) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/v1/responses", &websocket.DialOptions{HTTPHeader: header})
	if conn != nil {
		conn.SetReadLimit(-1)
		t.Cleanup(func() { _ = conn.CloseNow() })
	}
	return conn, resp, err
}

func TestResponsesSocketChecksTheKeyBeforeTheUpgrade(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-right"}, script(t, []string{"hi"}))
	for name, header := range map[string]http.Header{
		"no key":    {},
		"wrong key": {"Authorization": {"Bearer sk-wrong"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, resp, err := rawDial(t, s, header)
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "refused before the upgrade")
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, "authentication_error", gjson.GetBytes(body, "error.type").String(), "in the door's shape: %s", body)
		})
	}
	conn := dialResponses(t, s, "sk-right")
	done := lastEvent(socketTurn(t, conn, `{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`))
	assert.Equal(t, "response.completed", done.Get("type").String(), done.Raw)
}

// TestResponsesSocketAnswersABadMessageWithAnErrorEvent: a message the
// door cannot use gets an error event, in OpenAI's WebSocket shape with
// the status, and the connection serves the next turn.
func TestResponsesSocketAnswersABadMessageWithAnErrorEvent(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"fine"}))
	conn := dialResponses(t, s, "")
	cases := []struct{ msg, param, hint string }{
		{`not json`, "", "JSON object"},
		{`{"type":"session.update"}`, "type", "unknown message type"},
		{`{"type":"response.create","model":"claude-sonnet-4.6","input":42}`, "input", "input"},
		{`{"type":"response.create","model":"no-such-model","input":"hi"}`, "model", "no-such-model"},
		{`{"type":"response.create","model":"claude-sonnet-4.6","previous_response_id":"resp_nope","input":"hi"}`, "previous_response_id", "resp_nope"},
	}
	for _, c := range cases {
		ev := lastEvent(socketTurn(t, conn, c.msg))
		require.Equal(t, "error", ev.Get("type").String(), "%s: %s", c.msg, ev.Raw)
		assert.GreaterOrEqual(t, ev.Get("status").Int(), int64(400), ev.Raw)
		assert.Equal(t, c.param, ev.Get("error.param").String(), ev.Raw)
		assert.Contains(t, ev.Get("error.message").String(), c.hint, ev.Raw)
	}
	done := lastEvent(socketTurn(t, conn, `{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`))
	assert.Equal(t, "response.completed", done.Get("type").String(), "the connection goes on: %s", done.Raw)
}

// TestResponsesSocketRefusesAMessageOverTheLimit: a message over
// MAX_BODY_BYTES gets the error event, then the close code 1009.
func TestResponsesSocketRefusesAMessageOverTheLimit(t *testing.T) {
	s := newStack(t, map[string]string{"MAX_BODY_BYTES": "4096"}, script(t, []string{"fine"}))
	conn, _, err := rawDial(t, s, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big := `{"type":"response.create","model":"claude-sonnet-4.6","input":"` + strings.Repeat("x", 5000) + `"}`
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(big)))
	_, ev, err := conn.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(413), gjson.GetBytes(ev, "status").Int(), "%s", ev)
	assert.Equal(t, "request_too_large", gjson.GetBytes(ev, "error.code").String(), "%s", ev)
	assert.Contains(t, gjson.GetBytes(ev, "error.message").String(), "MAX_BODY_BYTES")
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), "%v", err)
	assert.Empty(t, s.up.Requests())
}

// TestResponsesSocketEndsAtItsTurnLimit: past RESPONSES_WS_MAX_TURNS the
// client is told to reconnect with the code Codex reconnects on.
func TestResponsesSocketEndsAtItsTurnLimit(t *testing.T) {
	s := newStack(t, map[string]string{"RESPONSES_WS_MAX_TURNS": "2"}, script(t, []string{"fine"}))
	conn := dialResponses(t, s, "")
	for range 2 {
		done := lastEvent(socketTurn(t, conn, `{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`))
		require.Equal(t, "response.completed", done.Get("type").String(), done.Raw)
	}
	ev := lastEvent(socketTurn(t, conn, `{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`))
	assert.Equal(t, "websocket_connection_limit_reached", ev.Get("error.code").String(), ev.Raw)
	assert.Contains(t, ev.Get("error.message").String(), "RESPONSES_WS_MAX_TURNS")
	assert.Len(t, s.up.Requests(), 2)
}

// TestResponsesSocketClosesAnIdleConnection: no message for
// RESPONSES_WS_IDLE_TIMEOUT closes the connection cleanly.
func TestResponsesSocketClosesAnIdleConnection(t *testing.T) {
	s := newStack(t, map[string]string{"RESPONSES_WS_IDLE_TIMEOUT": "1"}, script(t, []string{"fine"}))
	conn, _, err := rawDial(t, s, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = conn.Read(ctx)
	assert.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "%v", err)
	var ce websocket.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "RESPONSES_WS_IDLE_TIMEOUT")
}

// TestResponsesSocketClientLeavingMidTurnCancelsTheUpstream: the client
// drops the connection while the upstream is still answering; the
// upstream request is cancelled and no goroutine of the connection is
// left.
func TestResponsesSocketClientLeavingMidTurnCancelsTheUpstream(t *testing.T) {
	s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{`{"type":"text-delta","id":"t","delta":"partial "}`}, Hang: true}))
	// The gateway's and the fake's own goroutines are there already.
	warm := dialResponses(t, s, "")
	lastEvent(socketTurn(t, warm, `{"type":"response.create","model":"claude-sonnet-4.6","generate":false,"input":"hi"}`))
	require.NoError(t, warm.Close())
	ignore := goleak.IgnoreCurrent()

	conn, _, err := rawDial(t, s, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`)))
	for {
		_, ev, err := conn.Read(ctx)
		require.NoError(t, err)
		if gjson.GetBytes(ev, "type").String() == "response.output_text.delta" {
			break
		}
	}
	require.NoError(t, conn.CloseNow())
	select {
	case <-s.up.Canceled():
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	assert.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "status=499") }, 10*time.Second, 50*time.Millisecond,
		"the turn's access line says the client left")
	// The connection's own line is written once its handler returned.
	assert.Eventually(t, func() bool { return strings.Count(s.logs.String(), "status=101") == 2 }, 10*time.Second, 50*time.Millisecond)
	goleak.VerifyNone(t, ignore,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}

package handlers

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
	"cursor2api/services/state/redistest"
)

// TestLimitsEveryDoorsShape: a request over its key's rpm is a 429 in its
// door's own error shape, with Retry-After, naming the limit and the key,
// and never reaches the upstream.
func TestLimitsEveryDoorsShape(t *testing.T) {
	file := writeKeys(t, "keys:\n"+
		"  - {name: chat, key: sk-chat, limits: {rpm: 1}}\n"+
		"  - {name: resp, key: sk-resp, limits: {rpm: 1}}\n"+
		"  - {name: claude, key: sk-claude, limits: {rpm: 1}}\n"+
		"  - {name: gem, key: sk-gem, limits: {rpm: 1}}\n")
	s := newStack(t, map[string]string{"API_KEYS_FILE": file}, func(int, cursortest.Request) cursortest.Response {
		return cursortest.Text(&cursortest.Usage{Input: 10, Output: 1}, "ok")
	})
	for _, tc := range []struct {
		name, key, path, body string
		header                []string
		check                 func(t *testing.T, body gjson.Result)
	}{
		{"openai", "sk-chat", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, nil,
			func(t *testing.T, b gjson.Result) {
				assert.Equal(t, "rate_limit_error", b.Get("error.type").String())
				assert.Equal(t, "rate_limit_exceeded", b.Get("error.code").String())
			}},
		{"responses", "sk-resp", "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi"}`, nil,
			func(t *testing.T, b gjson.Result) {
				assert.Equal(t, "rate_limit_error", b.Get("error.type").String())
			}},
		{"anthropic", "sk-claude", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, []string{"anthropic-version", "2023-06-01"},
			func(t *testing.T, b gjson.Result) {
				assert.Equal(t, "error", b.Get("type").String())
				assert.Equal(t, "rate_limit_error", b.Get("error.type").String())
			}},
		{"gemini", "sk-gem", "/v1beta/models/claude-sonnet-4.6:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil,
			func(t *testing.T, b gjson.Result) {
				assert.EqualValues(t, 429, b.Get("error.code").Int())
				assert.Equal(t, "RESOURCE_EXHAUSTED", b.Get("error.status").String())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			header := append([]string{"Authorization", "Bearer " + tc.key}, tc.header...)
			first := s.do(t, http.MethodPost, tc.path, tc.body, header...)
			require.Equal(t, http.StatusOK, first.status, first.body)
			sent := len(s.up.Requests())
			over := s.do(t, http.MethodPost, tc.path, tc.body, header...)
			require.Equal(t, http.StatusTooManyRequests, over.status, over.body)
			retry, err := strconv.Atoi(over.header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After: %q", over.header.Get("Retry-After"))
			assert.True(t, retry >= 1 && retry <= 60, "%d", retry)
			b := gjson.Parse(over.body)
			tc.check(t, b)
			msg := b.Get("error.message").String()
			assert.Contains(t, msg, "rpm")
			assert.Contains(t, msg, `"`+tc.key[3:]+`"`, "the key's name")
			assert.Equal(t, sent, len(s.up.Requests()), "the refused request never reaches the upstream")
		})
	}
}

// TestLimitsTokensPerDay: once a key's answers reach its tokens for the
// day, its next request is refused until the UTC day turns.
func TestLimitsTokensPerDay(t *testing.T) {
	file := writeKeys(t, "keys:\n  - {name: alice, key: sk-alice, limits: {tokens_per_day: 150}}\n")
	s := newStack(t, map[string]string{"API_KEYS_FILE": file}, func(int, cursortest.Request) cursortest.Response {
		return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
	})
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	for i := range 2 {
		r := s.chat(t, chat, "Authorization", "Bearer sk-alice")
		require.Equal(t, http.StatusOK, r.status, "request %d: 110 then 220 tokens, the limit reached after: %s", i, r.body)
	}
	r := s.chat(t, chat, "Authorization", "Bearer sk-alice")
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "tokens_per_day")
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), `"alice"`)
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	assert.True(t, retry >= 1 && retry <= 86400, "until the day turns: %d", retry)
	assert.Len(t, s.up.Requests(), 2)
}

// TestLimitsConcurrentStream: a stream holds its slot until its last
// byte; the next request of the key is refused meanwhile, and let in after.
func TestLimitsConcurrentStream(t *testing.T) {
	file := writeKeys(t, "keys:\n  - {name: alice, key: sk-alice, limits: {concurrent: 1}}\n")
	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // never leave the upstream waiting
	s := newStack(t, map[string]string{"API_KEYS_FILE": file}, func(_ int, req cursortest.Request) cursortest.Response {
		if strings.Contains(string(req.Body), "hold on") {
			close(held)
			<-release // the first stream waits for the test
		}
		return cursortest.Text(nil, "ok")
	})
	chat := `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	first := make(chan reply, 1)
	go func() {
		first <- s.chat(t, strings.Replace(chat, `"hi"`, `"hold on"`, 1), "Authorization", "Bearer sk-alice")
	}()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the first stream never reached the upstream")
	}
	r := s.chat(t, chat, "Authorization", "Bearer sk-alice")
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "concurrent")
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	once.Do(func() { close(release) })
	require.Equal(t, http.StatusOK, (<-first).status)
	assert.Equal(t, http.StatusOK, s.chat(t, chat, "Authorization", "Bearer sk-alice").status, "the slot came back")
}

// TestLimitsWebSocketTurn: each turn of the Responses WebSocket is a
// request: past the key's rpm a turn gets the error event with status
// 429, and the connection goes on.
func TestLimitsWebSocketTurn(t *testing.T) {
	file := writeKeys(t, "keys:\n  - {name: codex, key: sk-codex, limits: {rpm: 1}}\n")
	s := newStack(t, map[string]string{"API_KEYS_FILE": file}, script(t, []string{"one", "two"}))
	conn, _, err := rawDial(t, s, http.Header{"Authorization": {"Bearer sk-codex"}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	turn := func() gjson.Result {
		require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`)))
		for {
			_, ev, err := conn.Read(ctx)
			require.NoError(t, err)
			switch e := gjson.ParseBytes(ev); e.Get("type").String() {
			case "response.completed", "response.failed", "error":
				return e
			}
		}
	}
	assert.Equal(t, "response.completed", turn().Get("type").String())
	ev := turn()
	require.Equal(t, "error", ev.Get("type").String(), ev.Raw)
	assert.EqualValues(t, 429, ev.Get("status").Int(), ev.Raw)
	assert.Contains(t, ev.Get("error.message").String(), `"codex"`)
	assert.Len(t, s.up.Requests(), 1)
}

// TestLimitsTwoGatewaysOnOneRedis: two gateways on one Redis are
// replicas: a key limited to 3 requests per minute gets exactly 3 through
// the two together, and one limited to 2 concurrent streams gets a 429 on
// the third, and its slot back when a stream ends.
func TestLimitsTwoGatewaysOnOneRedis(t *testing.T) {
	rs := redistest.Start(t)
	file := writeKeys(t, "keys:\n  - {name: team, key: sk-team, limits: {rpm: 3}}\n  - {name: streams, key: sk-streams, limits: {concurrent: 2}}\n")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	held := make(chan struct{}, 2)
	upstream := func(_ int, req cursortest.Request) cursortest.Response {
		if strings.Contains(string(req.Body), "hold on") {
			held <- struct{}{}
			<-release
		}
		return cursortest.Text(nil, "ok")
	}
	env := map[string]string{"API_KEYS_FILE": file, "STATE_URL": rs.URL()}
	a, b := newStack(t, env, upstream), newStack(t, env, upstream)
	if time.Now().Second() > 50 {
		time.Sleep(time.Duration(61-time.Now().Second()) * time.Second) // one minute's window for the whole count
	}
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	ok := 0
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		switch r := s.chat(t, chat, "Authorization", "Bearer sk-team"); r.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			assert.Contains(t, gjson.Get(r.body, "error.message").String(), `"team"`)
		default:
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	assert.Equal(t, 3, ok, "exactly rpm through the two")

	stream := `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hold on"}]}`
	done := make(chan reply, 2)
	for _, s := range []*stack{a, b} {
		go func() { done <- s.chat(t, stream, "Authorization", "Bearer sk-streams") }()
		select {
		case <-held:
		case <-time.After(20 * time.Second):
			t.Fatal("a stream never reached the upstream")
		}
	}
	r := a.chat(t, chat, "Authorization", "Bearer sk-streams")
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "concurrent")
	once.Do(func() { close(release) })
	require.Equal(t, http.StatusOK, (<-done).status)
	require.Equal(t, http.StatusOK, (<-done).status)
	assert.Equal(t, http.StatusOK, b.chat(t, chat, "Authorization", "Bearer sk-streams").status, "the slots came back")
}

// TestLimitsTokensOfAClientThatLeft: an answer's tokens count toward its
// key's day even when the client hangs up as the answer ends. The
// upstream sends its usage, then keeps its tail open, so the gateway's
// epilogue (bounded at 2 s) outlasts the client: the tokens are added
// after the request's context ended. On Redis, where that context is
// honoured, the count needs a context of its own.
func TestLimitsTokensOfAClientThatLeft(t *testing.T) {
	rs := redistest.Start(t)
	file := writeKeys(t, "keys:\n  - {name: alice, key: sk-alice, limits: {tokens_per_day: 100}}\n")
	frames := cursortest.Frames(&cursortest.Usage{Input: 100, Output: 10}, nil, []string{"ok"})
	frames = frames[:len(frames)-1] // no [DONE]: the tail hangs
	s := newStack(t, map[string]string{"API_KEYS_FILE": file, "STATE_URL": rs.URL(), "ADMIN_KEY": "adm-left-1"},
		cursortest.Always(cursortest.Response{Events: frames, Hang: true}))

	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-alice")
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	done := false
	for !done && sc.Scan() {
		done = sc.Text() == "data: [DONE]"
	}
	require.True(t, done, "the answer's last event: %v", sc.Err())
	// The client leaves with the answer's last event, before the
	// gateway's response ends (its epilogue still waits on the tail).
	require.NoError(t, resp.Body.Close())
	client.CloseIdleConnections()

	// The tokens are counted once the handler returns: after the
	// epilogue's 2 s; the console shows the day's count.
	var page string
	require.Eventually(t, func() bool {
		r := s.do(t, http.MethodGet, "/console", "", "Authorization", "Bearer adm-left-1")
		page = r.body
		return strings.Contains(page, "tokens_per_day 110/100")
	}, 20*time.Second, 500*time.Millisecond, "the day's tokens of alice on the console")
	r := s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer sk-alice")
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "tokens_per_day")
	assert.Len(t, s.up.Requests(), 1, "the refused request never reached the upstream")
}

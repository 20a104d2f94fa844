package handlers

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/handlers/console"
	"cursor2api/handlers/responses"
	"cursor2api/services"
	"cursor2api/services/clientkeys"
	"cursor2api/services/cursortest"
	"cursor2api/services/state"
	"cursor2api/services/usage"
)

// stack is the whole gateway, wired as server.New wires it, served by
// a loopback httptest server in front of a fake upstream.
type stack struct {
	*httptest.Server
	up   *cursortest.Server
	cfg  *config.Config
	logs *cursortest.LogBuffer
	// store is the Responses door's store of responses.
	store *testStore
	// ledger is the usage ledger, on the store's memory.
	ledger *usage.Ledger
	// keys are the client keys in force.
	keys *clientkeys.Set
}

// testStore is a Responses store in memory whose clock and size a test
// can see.
type testStore struct {
	*responses.Store
	mem *state.Memory
	mu  sync.Mutex
	now func() time.Time
}

func newTestStore(limits responses.StoreLimits) *testStore {
	ts := &testStore{now: time.Now}
	ts.mem = state.NewMemory(func() time.Time { ts.mu.Lock(); defer ts.mu.Unlock(); return ts.now() })
	ts.Store = responses.NewStore(state.NewQueue(ts.mem, 0, nil), limits)
	return ts
}

// SetClock replaces the store's clock.
func (ts *testStore) SetClock(now func() time.Time) { ts.mu.Lock(); ts.now = now; ts.mu.Unlock() }

// Len is the number of responses kept.
func (ts *testStore) Len() int { return ts.mem.Len("responses") }

// newStack starts the gateway configured by env (on top of CURSOR_API_URL
// pointing at a fake upstream answering with reply, and two public models)
// the way server.New does (config, services.FromConfig, handlers.New), with a
// static x-is-human value in place of the script.
func newStack(t testing.TB, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *stack {
	t.Helper()
	gin.SetMode(gin.TestMode)
	up := cursortest.NewServer(t, reply)
	vars := map[string]string{"CURSOR_API_URL": up.URL + "/api/chat", "MODELS": "claude-sonnet-4.6,gemini-3-flash", "LOG_LEVEL": "debug",
		"CHECKPOINT_PAGE_URL": up.URL + "/"} // the checkpoint's page is the fake's too
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	require.Empty(t, cfg.ProxyURL, "tests never leave the loopback")

	logs := &cursortest.LogBuffer{}
	level, err := cfg.SlogLevel()
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))

	keys, err := clientkeys.Load(cfg.APIKeysFile, cfg.APIKeys)
	require.NoError(t, err)
	// On a Redis STATE_URL the keys' limits are counted there, as
	// handlers/server does: stacks on one Redis are replicas.
	var limits clientkeys.Counter
	if strings.HasPrefix(cfg.StateURL, "redis://") {
		ro, err := redis.ParseURL(cfg.StateURL)
		require.NoError(t, err)
		rc := redis.NewClient(ro)
		rl := clientkeys.NewRedis(rc, clientkeys.DefaultLease)
		ctx, stop := context.WithCancel(context.Background())
		go rl.Run(ctx)
		t.Cleanup(func() { stop(); _ = rc.Close() })
		limits = rl
	}
	gw, err := services.FromConfig(cfg, logger, services.StaticHuman("test-x-is-human"))
	require.NoError(t, err)
	store := newTestStore(responses.StoreLimits{
		Max: cfg.ResponsesStoreMax, MaxBytes: cfg.ResponsesStoreBytes, TTL: cfg.ResponsesStoreTTL.Duration(),
	})
	ledger := usage.New(state.NewQueue(store.mem, 0, nil), 0, nil)
	handler := New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, APIKeys: cfg.APIKeys, ClientKeys: keys, Limits: limits,
		MaxBodyBytes: cfg.MaxBodyBytes, PingInterval: cfg.PingInterval.Duration(), Version: "test-version", Logger: logger,
		Usage: ledger, AdminKey: cfg.AdminKey, Backend: cfg.Backend, CompactionSecret: cfg.CompactionKey(),
		Responses: store.Store, Metrics: gw.Metrics, Readiness: gw.Readiness,
		ResponsesSocket: responses.SocketLimits{Idle: cfg.ResponsesWSIdle.Duration(), MaxTurns: cfg.ResponsesWSMaxTurns,
			MaxBytes: cfg.ResponsesWSMaxBytes, PingInterval: cfg.PingInterval.Duration()},
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, BodyReadTimeout: cfg.BodyReadTimeout.Duration(),
		Cloud: gw.Cloud,
		Tools: gw.MCPTools(), Settings: console.SettingsOf(cfg),
	})
	srv := httptest.NewServer(handler)
	gw.StartMCP(context.Background())
	t.Cleanup(func() {
		srv.Close() // waits for the handlers, so the log is complete
		gw.StopMCP()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &stack{Server: srv, up: up, cfg: cfg, logs: logs, store: store, ledger: ledger, keys: keys}
}

// callTriggerRE matches the per-request trigger of the tool protocol.
var callTriggerRE = regexp.MustCompile(`<<CALL_[A-Za-z0-9]{8}>>`)

// sentTrigger is the trigger in the system message the gateway sent, or "".
func sentTrigger(req cursortest.Request) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			return callTriggerRE.FindString(m.Text)
		}
	}
	return ""
}

// defaultUsage is the usage the scripted upstream reports in its finish frame.
var defaultUsage = cursortest.Usage{Input: 321, Output: 45}

// script is a fake upstream model: the n-th request gets turns[n] (the
// last repeating) as text deltas, with defaultUsage. "TRIGGER" in a delta
// becomes the trigger the gateway sent, or fails the test if none was sent.
func script(t testing.TB, turns ...[]string) func(int, cursortest.Request) cursortest.Response {
	return scriptWith(t, &defaultUsage, nil, turns...)
}

// scriptWith is script with the usage (nil: none) and the native
// reasoning deltas of every turn.
func scriptWith(t testing.TB, usage *cursortest.Usage, reasoning []string, turns ...[]string) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		trigger := sentTrigger(req)
		deltas := turns[min(n, len(turns)-1)]
		out := make([]string, len(deltas))
		for i, d := range deltas {
			if strings.Contains(d, "TRIGGER") && trigger == "" {
				t.Errorf("upstream request %d: the reply needs the trigger, but the system message has none", n)
			}
			out[i] = strings.ReplaceAll(d, "TRIGGER", trigger)
		}
		return cursortest.Response{Events: cursortest.Frames(usage, reasoning, out)}
	}
}

// chopped is a fake upstream model answering every request with text, its
// "TRIGGER" replaced as in script, cut into deltas of size bytes (never
// inside a UTF-8 sequence), so that every marker is split across deltas.
func chopped(t testing.TB, size int, text string) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		trigger := sentTrigger(req)
		if strings.Contains(text, "TRIGGER") && trigger == "" {
			t.Errorf("upstream request %d: the reply needs the trigger, but the system message has none", n)
		}
		full := strings.ReplaceAll(text, "TRIGGER", trigger)
		var deltas []string
		for len(full) > 0 {
			cut := min(size, len(full))
			for cut < len(full) && !utf8.RuneStart(full[cut]) {
				cut++
			}
			deltas = append(deltas, full[:cut])
			full = full[cut:]
		}
		return cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, deltas)}
	}
}

// reply is one HTTP answer of the gateway.
type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request to the gateway; header holds name, value pairs.
func (s *stack) do(t testing.TB, method, path, body string, header ...string) reply {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	require.Zero(t, len(header)%2, "header is name, value pairs")
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := *s.Client()
	client.Timeout = time.Minute // a response that never ends fails the test instead of hanging it
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// chat posts a chat completion request.
func (s *stack) chat(t testing.TB, body string, header ...string) reply {
	t.Helper()
	return s.do(t, http.MethodPost, "/v1/chat/completions", body, header...)
}

// keys returns the sorted keys of a JSON object.
func keys(t testing.TB, obj gjson.Result) []string {
	t.Helper()
	require.True(t, obj.IsObject(), "not an object: %s", obj.Raw)
	var out []string
	obj.ForEach(func(k, _ gjson.Result) bool {
		out = append(out, k.String())
		return true
	})
	sort.Strings(out)
	return out
}

// assertKeys checks that obj has every key of required and no other key
// than those and optional.
func assertKeys(t testing.TB, obj gjson.Result, required []string, optional ...string) {
	t.Helper()
	var got []string
	for _, k := range keys(t, obj) {
		if !slices.Contains(optional, k) {
			got = append(got, k)
		}
	}
	assert.Equal(t, required, got, "%s: only the optional %v besides", obj.Raw, optional)
}

// assertAPIError checks an OpenAI error response: status, JSON content
// type, the exact set of fields, type, param (null when param is ""), code
// (when code is not ""), and that the message holds every hint.
func assertAPIError(t testing.TB, r reply, status int, typ, param, code string, hints ...string) {
	t.Helper()
	require.Equal(t, status, r.status, r.body)
	assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"), "content type %q", r.header.Get("Content-Type"))
	require.True(t, gjson.Valid(r.body), "the body is JSON: %q", r.body)
	assertErrorObject(t, gjson.Parse(r.body), typ, param, code, hints...)
}

// assertErrorObject checks a {"error":{...}} value, from a body or a chunk.
func assertErrorObject(t testing.TB, v gjson.Result, typ, param, code string, hints ...string) {
	t.Helper()
	assert.Equal(t, []string{"error"}, keys(t, v), v.Raw)
	e := v.Get("error")
	assert.Equal(t, []string{"code", "message", "param", "type"}, keys(t, e), "every field present, null when unknown")
	assert.Equal(t, typ, e.Get("type").String(), v.Raw)
	if param == "" {
		assert.Equal(t, "null", e.Get("param").Raw, v.Raw)
	} else {
		assert.Equal(t, param, e.Get("param").String(), v.Raw)
	}
	if code != "" {
		assert.Equal(t, code, e.Get("code").String(), v.Raw)
	}
	msg := e.Get("message").String()
	assert.NotEmpty(t, msg)
	for _, h := range hints {
		assert.Contains(t, msg, h, "the message says what to fix")
	}
	for _, leak := range []string{"<html", "<title", "models.", "[]", "map["} {
		assert.NotContains(t, msg, leak, "no upstream HTML or Go type names in the message")
	}
}

// sseData checks a stream body's framing: only "data: <one line of
// JSON>\n\n" events, ending with "data: [DONE]\n\n" and nothing after. It
// returns the JSON payloads before [DONE].
func sseData(t testing.TB, body string) []string {
	t.Helper()
	var payloads []string
	rest := body
	for {
		require.True(t, strings.HasPrefix(rest, "data: "), "every event is a data event; at %q", clipTail(rest))
		end := strings.Index(rest, "\n\n")
		require.GreaterOrEqual(t, end, 0, "the event %q is ended by a blank line", clipTail(rest))
		payload := rest[len("data: "):end]
		rest = rest[end+2:]
		require.NotContains(t, payload, "\n", "one line per event")
		require.NotContains(t, payload, "\r")
		if payload == "[DONE]" {
			require.Empty(t, rest, "nothing follows [DONE]")
			return payloads
		}
		require.True(t, strings.HasPrefix(payload, "{") && json.Valid([]byte(payload)), "the data is one JSON object: %q", payload)
		payloads = append(payloads, payload)
	}
}

func clipTail(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// streamedCall is one tool call reassembled from its deltas.
type streamedCall struct {
	ID, Name, Arguments string
	Fragments           []string // the arguments as they arrived
}

// streamed is a checked stream, reassembled.
type streamed struct {
	ID        string
	Created   int64
	Text      string
	Reasoning string
	Calls     []streamedCall
	Finish    string
	Usage     *gjson.Result
	Error     *gjson.Result // the error chunk that ended the stream
	Chunks    int
}

// protocolMarkup must never reach the client's content.
var protocolMarkup = []string{"<<CALL_", "<invoke", "</invoke>", "<thinking>", "</thinking>", "<tool_result"}

// checkStream checks a streamed chat completion and reassembles it:
// headers and framing, the same id, created, model and object on every
// chunk, exact delta fields (a call's id, type and name on its first delta
// only, indexes in order), finish_reason non-null once, then at most one
// usage chunk with empty choices; an error chunk only last; no markup.
func checkStream(t testing.TB, r reply, model string) streamed {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "text/event-stream", strings.TrimSpace(strings.Split(r.header.Get("Content-Type"), ";")[0]))
	assert.Equal(t, "no", r.header.Get("X-Accel-Buffering"))
	assert.NotContains(t, r.body, "\nevent:")
	assert.False(t, strings.HasPrefix(r.body, "event:"))

	payloads := sseData(t, r.body)
	require.NotEmpty(t, payloads, "at least one chunk before [DONE]")
	var out streamed
	finishAt := -1
	for i, raw := range payloads {
		c := gjson.Parse(raw)
		if c.Get("error").Exists() {
			require.Equal(t, len(payloads)-1, i, "an error chunk ends the stream: %s", raw)
			out.Error = &c
			break
		}
		if i == 0 {
			out.ID, out.Created = c.Get("id").String(), c.Get("created").Int()
			assert.True(t, strings.HasPrefix(out.ID, "chatcmpl-"), out.ID)
			assert.Greater(t, out.Created, int64(1_600_000_000))
		}
		assert.Equal(t, out.ID, c.Get("id").String(), "chunk %d: the same id", i)
		assert.Equal(t, gjson.Number, c.Get("created").Type)
		assert.Equal(t, out.Created, c.Get("created").Int(), "chunk %d: the same created", i)
		assert.Equal(t, model, c.Get("model").String(), "chunk %d: the model echoed", i)
		assert.Equal(t, "chat.completion.chunk", c.Get("object").String(), "chunk %d", i)

		if c.Get("usage").Exists() {
			assert.Equal(t, []string{"choices", "created", "id", "model", "object", "usage"}, keys(t, c), raw)
			assert.Equal(t, "[]", c.Get("choices").Raw, "the usage chunk has no choices")
			require.GreaterOrEqual(t, finishAt, 0, "usage comes after the finish chunk")
			require.Nil(t, out.Usage, "one usage chunk")
			assertKeys(t, c.Get("usage"), []string{"completion_tokens", "prompt_tokens", "total_tokens"},
				"completion_tokens_details", "prompt_tokens_details") // the details when the upstream counts them
			u := c.Get("usage")
			out.Usage = &u
			continue
		}
		assert.Equal(t, []string{"choices", "created", "id", "model", "object"}, keys(t, c), "chunk %d: no usage field without stream_options.include_usage", i)
		require.Less(t, finishAt, 0, "nothing but usage after the finish chunk: %s", raw)
		choices := c.Get("choices").Array()
		require.Len(t, choices, 1, raw)
		ch := choices[0]
		assert.Equal(t, []string{"delta", "finish_reason", "index"}, keys(t, ch), raw)
		assert.Equal(t, "0", ch.Get("index").Raw)
		delta := ch.Get("delta")
		fr := ch.Get("finish_reason")
		out.Chunks++

		if i == 0 {
			assert.Equal(t, `{"role":"assistant","content":""}`, delta.Raw, "the opening delta")
			assert.Equal(t, "null", fr.Raw)
			continue
		}
		if fr.Raw != "null" {
			require.Equal(t, gjson.String, fr.Type, raw)
			out.Finish = fr.String()
			finishAt = i
			assert.Equal(t, "{}", delta.Raw, "the finish chunk carries no delta, as OpenAI sends it")
			continue
		}
		dk := keys(t, delta)
		require.Len(t, dk, 1, "one thing per delta: %s", raw)
		switch dk[0] {
		case "content":
			require.Equal(t, gjson.String, delta.Get("content").Type, raw)
			out.Text += delta.Get("content").String()
		case "reasoning_content":
			out.Reasoning += delta.Get("reasoning_content").String()
		case "tool_calls":
			tcs := delta.Get("tool_calls").Array()
			require.Len(t, tcs, 1, raw)
			tc := tcs[0]
			require.Equal(t, gjson.Number, tc.Get("index").Type, "index is always an integer: %s", raw)
			idx := int(tc.Get("index").Int())
			require.Equal(t, tc.Get("index").Raw, strconv.Itoa(idx), "an integer index")
			if idx == len(out.Calls) {
				// The call's first delta.
				assert.Equal(t, []string{"function", "id", "index", "type"}, keys(t, tc), raw)
				assert.Regexp(t, `^call_[A-Za-z0-9]+$`, tc.Get("id").String())
				assert.Equal(t, "function", tc.Get("type").String())
				assert.Equal(t, []string{"arguments", "name"}, keys(t, tc.Get("function")), raw)
				assert.Equal(t, `""`, tc.Get("function.arguments").Raw, "the first delta has empty arguments")
				require.NotEmpty(t, tc.Get("function.name").String())
				out.Calls = append(out.Calls, streamedCall{ID: tc.Get("id").String(), Name: tc.Get("function.name").String()})
				continue
			}
			require.Equal(t, len(out.Calls)-1, idx, "fragments continue the last call; indexes go 0,1,2…: %s", raw)
			assert.Equal(t, []string{"function", "index"}, keys(t, tc), "a fragment has only index and function.arguments: %s", raw)
			assert.Equal(t, []string{"arguments"}, keys(t, tc.Get("function")), raw)
			out.Calls[idx].Arguments += tc.Get("function.arguments").String()
			out.Calls[idx].Fragments = append(out.Calls[idx].Fragments, tc.Get("function.arguments").String())
		default:
			t.Errorf("unexpected delta field %q: %s", dk[0], raw)
		}
	}
	if out.Error == nil {
		assert.GreaterOrEqual(t, finishAt, 0, "a finish chunk")
	} else {
		assert.Less(t, finishAt, 0, "no finish chunk before an error chunk")
	}
	for _, mark := range protocolMarkup {
		assert.NotContains(t, out.Text, mark, "protocol markup in the content")
	}
	for i, c := range out.Calls {
		if strings.Contains(out.Text, "call of "+c.Name+" above is incomplete") {
			continue // a streamed call refused at its end, as the content says
		}
		assert.True(t, json.Valid([]byte(c.Arguments)), "call %d arguments are JSON: %q", i, c.Arguments)
	}
	return out
}

// jsonArgs decodes a call's arguments.
func jsonArgs(t testing.TB, args string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(args), &m), "arguments %q", args)
	return m
}

// nodeBinary is the Node that runs a test's JavaScript: NODE22_BIN (which
// .ci/run installs), else the node on PATH; the test skips without one.
func nodeBinary(t testing.TB) string {
	t.Helper()
	if node := os.Getenv("NODE22_BIN"); node != "" {
		return node
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: no node (NODE22_BIN or node in PATH)")
	}
	return node
}

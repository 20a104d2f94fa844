package webchat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/upstream"
)

func TestCatalogOf(t *testing.T) {
	cases := []struct {
		name string
		ids  []string
		want []string // published names
		up   map[string]string
	}{
		{"2026: one model", []string{"google/gemini-3-flash"}, []string{"gemini-3-flash", "gemini-3-flash-thinking"},
			map[string]string{"gemini-3-flash": "google/gemini-3-flash", "gemini-3-flash-thinking": "google/gemini-3-flash"}},
		{"several, in the upstream's order", []string{"anthropic/claude-sonnet-4.6", "openai/gpt-5"},
			[]string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking", "gpt-5", "gpt-5-thinking"},
			map[string]string{"claude-sonnet-4.6": "anthropic/claude-sonnet-4.6", "gpt-5": "openai/gpt-5"}},
		{"a shared name keeps the second's whole id", []string{"a/m", "b/m", "a/m"}, []string{"m", "m-thinking", "b/m", "b/m-thinking"},
			map[string]string{"m": "a/m", "b/m": "b/m"}},
		{"an id without vendor", []string{"plain"}, []string{"plain", "plain-thinking"}, map[string]string{"plain": "plain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CatalogOf(tc.ids)
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Names())
			for public, id := range tc.up {
				m, ok := c.Resolve(public)
				require.True(t, ok, public)
				assert.Equal(t, id, m.Upstream, public)
			}
		})
	}
	_, err := CatalogOf([]string{" ", ""})
	assert.Error(t, err)
}

// learner is LearnedModels on a client of the fake upstream.
func learner(t *testing.T, up *cursortest.Server, interval, retry time.Duration) (*LearnedModels, *cursortest.LogBuffer) {
	t.Helper()
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	client := &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: 2 * time.Second, Logger: logger}
	l, err := NewLearnedModels(client, interval, retry, 2*time.Second, logger)
	require.NoError(t, err)
	return l, logs
}

// run runs l.Run until the test ends and checks it returns.
func run(t *testing.T, l *LearnedModels) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

func TestLearnedModelsFollowTheUpstream(t *testing.T) {
	gate := cursortest.NewModelGate("anthropic/claude-sonnet-4.6")
	up := cursortest.NewServer(t, gate.Reply(cursortest.Always(cursortest.Text(nil, "ok"))))
	l, _ := learner(t, up, 30*time.Millisecond, time.Hour)

	st := l.State()
	assert.Equal(t, "fallback", st.Source, "before the upstream is asked")
	assert.Equal(t, []string{"gemini-3-flash", "gemini-3-flash-thinking"}, l.Catalog.Names())

	run(t, l)
	require.Eventually(t, func() bool { return l.State().Source == "upstream" }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking"}, l.Catalog.Names(), "learned at start")
	assert.Equal(t, []string{"anthropic/claude-sonnet-4.6"}, l.State().Allowed)

	gate.Set("google/gemini-3-flash", "openai/gpt-5")
	require.Eventually(t, func() bool { return len(l.Catalog.Names()) == 4 }, 5*time.Second, 5*time.Millisecond, "the periodic check sees the change")
	assert.Equal(t, []string{"gemini-3-flash", "gemini-3-flash-thinking", "gpt-5", "gpt-5-thinking"}, l.Catalog.Names())
	for _, r := range up.Requests() {
		assert.Equal(t, probeModel, r.Model, "only probes were sent")
	}
}

func TestLearnedModelsRetrySoonAfterAFailure(t *testing.T) {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	answer := gate.Reply(cursortest.Always(cursortest.Text(nil, "ok")))
	up := cursortest.NewServer(t, func(n int, req cursortest.Request) cursortest.Response {
		if n == 0 {
			return cursortest.Response{Status: http.StatusTooManyRequests, Body: "<html><title>Vercel Security Checkpoint</title></html>"}
		}
		return answer(n, req)
	})
	l, logs := learner(t, up, time.Hour, 20*time.Millisecond)
	run(t, l)
	require.Eventually(t, func() bool { return l.State().Source == "upstream" }, 5*time.Second, 5*time.Millisecond,
		"the retry after the failed check comes long before the hour")
	assert.Contains(t, logs.String(), "could not learn the upstream's models")
	assert.Contains(t, logs.String(), "cursor2api doctor")
	assert.Len(t, up.Requests(), 2)
}

func TestLearnedModelsFailedCheckIsReported(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "anything goes")))
	l, _ := learner(t, up, time.Hour, time.Hour)
	err := l.Learn(context.Background())
	require.Error(t, err)
	st := l.State()
	assert.Equal(t, "fallback", st.Source)
	assert.Contains(t, st.LastError, "does not restrict models")
	assert.Equal(t, []string{"gemini-3-flash", "gemini-3-flash-thinking"}, l.Catalog.Names(), "the fallback stays")
}

// A request for a model the upstream dropped since the last check is a
// 400 listing what is served now, and the catalog follows at once.
func TestGuardRefreshesOnARefusedModel(t *testing.T) {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	up := cursortest.NewServer(t, gate.Reply(cursortest.Always(cursortest.Text(nil, "ok"))))
	l, _ := learner(t, up, time.Hour, time.Hour)
	require.NoError(t, l.Learn(context.Background()))
	guarded := l.Guard(l.Client)

	_, err := guarded.Stream(context.Background(), upstream.Request{Model: "google/gemini-3-flash", Messages: hiRequest.Messages},
		func(upstream.Delta) error { return nil })
	require.NoError(t, err, "an allowed model passes")

	gate.Set("openai/gpt-5.2")
	_, err = guarded.Stream(context.Background(), upstream.Request{Model: "google/gemini-3-flash", Messages: hiRequest.Messages},
		func(upstream.Delta) error { return nil })
	var e *models.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, http.StatusBadRequest, e.Status)
	assert.Equal(t, "model_not_supported", e.Code)
	assert.Contains(t, e.Message, "google/gemini-3-flash")
	assert.Contains(t, e.Message, "now serves: gpt-5.2, gpt-5.2-thinking")
	assert.Equal(t, []string{"gpt-5.2", "gpt-5.2-thinking"}, l.Catalog.Names())

	// Other failures pass through untouched.
	down := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Status: http.StatusBadRequest, Body: `{"error":"bad body"}`}))
	l2, _ := learner(t, down, time.Hour, time.Hour)
	_, err = l2.Guard(l2.Client).Stream(context.Background(), hiRequest, func(upstream.Delta) error { return nil })
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "upstream_bad_request", e.Code)
}

// The body is what the web page sends in 2026: an id on the request and
// on every message, and the page's context entry.
func TestRequestBodyAsTheBrowserSendsIt(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	client := &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	_, err := client.Stream(context.Background(), upstream.Request{Model: "google/gemini-3-flash", Messages: []models.Turn{
		{Role: models.RoleSystem, Text: "be brief"}, {Role: models.RoleUser, Text: "hi"}, {Role: models.RoleAssistant, Text: "hello"}, {Role: models.RoleUser, Text: "again"},
	}}, func(upstream.Delta) error { return nil })
	require.NoError(t, err)
	body := gjson.ParseBytes(up.Requests()[0].Body)
	assert.JSONEq(t, `[{"type":"file","content":"","filePath":"/docs/"}]`, body.Get("context").Raw)
	assert.Equal(t, "google/gemini-3-flash", body.Get("model").String())
	assert.Equal(t, "submit-message", body.Get("trigger").String())
	assert.Len(t, body.Get("id").String(), 16)
	ids := map[string]bool{}
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	msgs := body.Get("messages").Array()
	require.Len(t, msgs, 4)
	for i, m := range msgs {
		id := m.Get("id").String()
		assert.Regexp(t, hex16, id, "message %d", i)
		assert.False(t, ids[id], "message ids differ")
		ids[id] = true
		assert.Equal(t, "text", m.Get("parts.0.type").String())
	}
	assert.Equal(t, []any{"system", "user", "assistant", "user"}, body.Get("messages.#.role").Value())
	assert.Equal(t, "again", body.Get("messages.3.parts.0.text").String())
}

// failingHuman is a provider whose value cannot be had: at once, or only
// after the caller gave up waiting.
type failingHuman struct{ block bool }

func (f failingHuman) Value(ctx context.Context) (string, error) {
	if f.block {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "", errors.New("script threw")
}
func (failingHuman) Invalidate() {}

func TestXIsHumanEmptyWhenTheScriptFails(t *testing.T) {
	cases := []struct {
		name  string
		human HumanProvider
		want  []string // the header's values; nil: no header
	}{
		{"the script fails", failingHuman{}, []string{""}},
		{"the script is too slow", failingHuman{block: true}, []string{""}},
		{"a value", StaticHuman("v1"), []string{"v1"}},
		{"off", StaticHuman(""), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
			client := &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
				Human: tc.human, HumanWait: 100 * time.Millisecond}
			start := time.Now()
			_, err := client.Stream(context.Background(), hiRequest, func(upstream.Delta) error { return nil })
			require.NoError(t, err, "the request goes on")
			assert.Less(t, time.Since(start), 2*time.Second, "the wait is bounded by HumanWait")
			assert.Equal(t, tc.want, up.Requests()[0].Header.Values("X-Is-Human"))
		})
	}
}

// An upstream that accepts any id has no list to learn: the published
// list stays and it is not asked again soon (each probe is a real chat).
func TestLearnedModelsUnrestrictedUpstream(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "anything goes")))
	l, logs := learner(t, up, time.Hour, 10*time.Millisecond)
	run(t, l)
	require.Eventually(t, func() bool { return len(up.Requests()) == 1 && l.State().LastError != "" }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // twenty Retry periods
	assert.Len(t, up.Requests(), 1, "asked again only after Interval")
	assert.Contains(t, logs.String(), "accepts any model id")
	assert.Equal(t, []string{"gemini-3-flash", "gemini-3-flash-thinking"}, l.Catalog.Names())
}

package handlers

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cursortest"
	nativekeys "cursor2api/services/native/keys"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/state"
)

// newNativeReplica runs a gateway on BACKEND=cursor against up, keeping
// its state in q: several of them on one store are replicas of one
// deployment, or one gateway before and after a restart.
func newNativeReplica(t *testing.T, up *nativetest.Server, q *state.Queue) *stack {
	t.Helper()
	gin.SetMode(gin.TestMode)
	cfg, err := config.FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": up.URL,
		"CURSOR_TRANSPORT": "http2", "LOG_LEVEL": "debug", "CURSOR_API_URL": "http://127.0.0.1:9/never",
	})
	require.NoError(t, err)
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, err := services.FromConfigState(cfg, logger, q)
	require.NoError(t, err)
	srv := httptest.NewServer(New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Version: "test-version", Logger: logger,
		Metrics: gw.Metrics, Readiness: gw.Readiness,
	}))
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &stack{Server: srv, cfg: cfg, logs: logs}
}

// Replicas on one state store share their keys' rests: after a quota on one,
// a replica started later rests the key at once, a running one by its next
// read of the store, and neither sends Cursor a request with that key.
func TestNativeKeyRestsSharedByReplicas(t *testing.T) {
	up := nativetest.NewServer(t, nativetest.Options{Script: nativeScenarios})
	q := state.NewQueue(state.NewMemory(nil), 0, nil)
	fp := nativekeys.Fingerprint(nativetest.DefaultAPIKey)
	running := newNativeReplica(t, up, q)
	one := newNativeReplica(t, up, q)

	r := one.chat(t, `{"model":"composer-2","messages":[{"role":"user","content":"SCENARIO:quota"}]}`)
	require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
	runs := len(up.Runs())
	// The rest is written in the background, at once.
	require.Eventually(t, func() bool {
		_, err := q.Store().Get(t.Context(), nativekeys.RestsTable, fp)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the rest reaches the store")

	for _, tc := range []struct {
		name  string
		stack func() *stack
	}{
		{"started afterwards", func() *stack { return newNativeReplica(t, up, q) }},
		{"already running", func() *stack {
			// Its next read comes within SyncEvery of its last; /ready
			// starts one when due.
			require.Eventually(t, func() bool {
				return running.do(t, http.MethodGet, "/ready", "").status == http.StatusServiceUnavailable
			}, nativekeys.DefaultSyncEvery+5*time.Second, 100*time.Millisecond)
			return running
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stack()
			r := s.do(t, http.MethodGet, "/ready", "")
			assert.Equal(t, http.StatusServiceUnavailable, r.status, "no key can serve: %s", r.body)
			k := gjson.Get(r.body, `keys.#(key=="`+fp+`")`)
			assert.Equal(t, "cooling", k.Get("state").String(), r.body)
			assert.Contains(t, k.Get("last_error").String(), "usage limit", r.body)
			assert.EqualValues(t, 0, k.Get("cooldowns").Int(), "the rest is counted where it began")
			m := s.do(t, http.MethodGet, "/metrics", "")
			assert.Contains(t, m.body, `cursor2api_cursor_key_state{key="`+fp+`",state="cooling"} 1`)
			assert.Regexp(t, `cursor2api_cursor_key_cooling_seconds\{key="`+fp+`"\} (1[0-9]|2[0-9]|30)(\.\d+)?`, m.body)

			r = s.chat(t, `{"model":"composer-2","messages":[{"role":"user","content":"SCENARIO:text"}]}`)
			require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
			assert.Equal(t, "cursor_keys_resting", gjson.Get(r.body, "error.code").String(), r.body)
			assert.NotEmpty(t, r.header.Get("Retry-After"))
			assert.Len(t, up.Runs(), runs, "nothing reached Cursor with the resting key")
		})
	}
}

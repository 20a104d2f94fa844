package handlers

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cursortest"
)

// newOpsStack is newStack with the operations surface wired as server.New
// wires it: metrics, readiness and trusted proxies.
func newOpsStack(t *testing.T, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *stack {
	t.Helper()
	gin.SetMode(gin.TestMode)
	up := cursortest.NewServer(t, reply)
	vars := map[string]string{"CURSOR_API_URL": up.URL + "/api/chat", "MODELS": "claude-sonnet-4.6,gemini-3-flash", "TLS_FINGERPRINT": "off"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	gw, err := services.FromConfig(cfg, logger, services.StaticHuman("test-x-is-human"))
	require.NoError(t, err)
	srv := httptest.NewServer(New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, MaxBodyBytes: cfg.MaxBodyBytes, Version: "test-version", Logger: logger,
		Metrics: gw.Metrics, Readiness: gw.Readiness, TrustedProxies: cfg.TrustedProxies,
	}))
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &stack{Server: srv, up: up, cfg: cfg, logs: logs}
}

const toolsBody = `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"Weather in Paris?"}],
 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`

func TestMetricsAfterAScriptedRun(t *testing.T) {
	turns := [][]string{
		{"Hello", " there"}, // 1: a streamed answer
		{"TRIGGER\n<invoke name=\"get_weather\">not json</invoke>"},             // 2: a bad call in a held turn...
		{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>"}, // ...asked again: a valid call
	}
	text := script(t, turns...)
	s := newOpsStack(t, nil, func(n int, req cursortest.Request) cursortest.Response {
		if n >= 3 { // 4: the upstream fails, and its one retry too
			return cursortest.Response{Status: http.StatusInternalServerError, Body: "boom"}
		}
		return text(n, req)
	})

	r := s.chat(t, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	r = s.chat(t, toolsBody)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, "get_weather", gjson.Get(r.body, "choices.0.message.tool_calls.0.function.name").String(), r.body)
	unknown := s.chat(t, `{"model":"no-such-model","messages":[{"role":"user","content":"hi"}]}`)
	require.GreaterOrEqual(t, unknown.status, 400)
	failed := s.chat(t, `{"model":"gemini-3-flash","messages":[{"role":"user","content":"hi"}]}`)
	require.GreaterOrEqual(t, failed.status, 500)

	m := s.do(t, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, m.status)
	for _, line := range []string{
		`cursor2api_requests_total{door="openai",model="claude-sonnet-4.6",status="200"} 2`,
		`cursor2api_requests_total{door="openai",model="other",status="` + strconv.Itoa(unknown.status) + `"} 1`,
		`cursor2api_requests_total{door="openai",model="gemini-3-flash",status="` + strconv.Itoa(failed.status) + `"} 1`,
		`cursor2api_time_to_first_token_seconds_count{door="openai",model="claude-sonnet-4.6"} 1`,
		`cursor2api_active_streams 0`,
		`cursor2api_upstream_requests_total{status="200"} 3`,
		`cursor2api_upstream_requests_total{status="500"} 2`,
		`cursor2api_upstream_latency_seconds_count{status="200"} 3`,
		`cursor2api_upstream_retries_total 1`,
		`cursor2api_tool_calls_total 1`,
		`cursor2api_held_turns_total 2`, // the two whole answers (the streamed one needs no call)
		`cursor2api_strict_retries_total{reason="bad_call"} 1`,
		`cursor2api_bad_tool_calls_total{reason="bad_json"} 1`,
		`cursor2api_x_is_human_evaluations_total 0`,
		`cursor2api_x_is_human_failing 0`,
		`go_goroutines `,
	} {
		assert.True(t, strings.Contains(m.body, line+ifNotPrefix(line)), "/metrics lacks %q", line)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", m.body[:strings.Index(m.body, "# HELP go_")])
	}
	assert.NotContains(t, m.body, "no-such-model", "client-chosen names do not become labels")
}

// ifNotPrefix ends a whole metric line with its newline, so that "… 1"
// does not match "… 10"; a line ending in a space is a prefix.
func ifNotPrefix(line string) string {
	if strings.HasSuffix(line, " ") {
		return ""
	}
	return "\n"
}

func TestReadyFollowsTheUpstream(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	s := newOpsStack(t, nil, func(n int, req cursortest.Request) cursortest.Response {
		if failing.Load() {
			return cursortest.Response{Status: http.StatusBadGateway, Body: "down"}
		}
		return cursortest.Text(nil, "ok")
	})
	ready := func() (int, gjson.Result) {
		r := s.do(t, http.MethodGet, "/ready", "")
		return r.status, gjson.Parse(r.body)
	}
	status, body := ready()
	assert.Equal(t, http.StatusOK, status, body.Raw)
	assert.True(t, body.Get("ready").Bool())
	assert.Equal(t, "valid", body.Get("config").String())
	assert.Equal(t, "script", body.Get("x_is_human.mode").String(), "the configured mode (no SCRIPT_URL: random values)")
	assert.False(t, body.Get("upstream.last_failure").Exists())

	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	for i := 1; i <= 3; i++ {
		require.GreaterOrEqual(t, s.chat(t, chat).status, 500)
		status, body = ready()
		if i < 3 {
			assert.Equal(t, http.StatusOK, status, "after %d failed turns: %s", i, body.Raw)
		}
	}
	assert.Equal(t, http.StatusServiceUnavailable, status, body.Raw)
	assert.False(t, body.Get("ready").Bool())
	assert.Contains(t, body.Get("reasons.0").String(), "the last 3 upstream turns failed")
	assert.EqualValues(t, 3, body.Get("upstream.failures_in_a_row").Int())
	assert.Contains(t, body.Get("upstream.last_error").String(), "502")
	assert.True(t, body.Get("upstream.last_failure_age").Exists())

	failing.Store(false)
	require.Equal(t, http.StatusOK, s.chat(t, chat).status)
	status, body = ready()
	assert.Equal(t, http.StatusOK, status, body.Raw)
	assert.EqualValues(t, 0, body.Get("upstream.failures_in_a_row").Int())
	assert.True(t, body.Get("upstream.last_success").Exists())
}

func TestTrustedProxiesNameTheClient(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		header  []string
		client  string
	}{
		{"trusted X-Forwarded-For", "127.0.0.1", []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"trusted X-Forwarded-For chain", "127.0.0.0/8", []string{"X-Forwarded-For", "198.51.100.4, 203.0.113.9"}, "203.0.113.9"},
		{"trusted X-Real-IP", "127.0.0.1", []string{"X-Real-IP", "203.0.113.9"}, "203.0.113.9"},
		{"untrusted peer", "10.0.0.0/8", []string{"X-Forwarded-For", "203.0.113.9"}, "127.0.0.1"},
		{"no TRUSTED_PROXIES", "", []string{"X-Forwarded-For", "203.0.113.9"}, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newOpsStack(t, map[string]string{"TRUSTED_PROXIES": c.trusted}, script(t, []string{"ok"}))
			r := s.do(t, http.MethodGet, "/v1/models", "", c.header...)
			require.Equal(t, http.StatusOK, r.status)
			s.Close() // the access log is complete
			assert.Contains(t, s.logs.String(), "client="+c.client+" ")
		})
	}
}

package handlers

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cursortest"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// newNativeStack runs the gateway on BACKEND=cursor against the fake of
// Cursor's native backend.
func newNativeStack(t *testing.T, script func(*agentv1.AgentRunRequest) nativetest.Script) (*stack, *nativetest.Server) {
	t.Helper()
	return newNativeStackWith(t, nativetest.Options{Script: script}, nil)
}

// newNativeStackEnv is newNativeStack with env's settings on top.
func newNativeStackEnv(t *testing.T, env map[string]string, script func(*agentv1.AgentRunRequest) nativetest.Script) (*stack, *nativetest.Server) {
	t.Helper()
	return newNativeStackWith(t, nativetest.Options{Script: script}, env)
}

// newNativeStackWith runs the gateway on BACKEND=cursor, configured by env
// on top of the defaults, against a fake configured by opts.
func newNativeStackWith(t *testing.T, opts nativetest.Options, env map[string]string) (*stack, *nativetest.Server) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	up := nativetest.NewServer(t, opts)
	vars := map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": up.URL,
		"CURSOR_TRANSPORT": "http2", "LOG_LEVEL": "debug", "CURSOR_API_URL": "http://127.0.0.1:9/never",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, err := services.FromConfig(cfg, logger)
	require.NoError(t, err)
	handler := New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, APIKeys: cfg.APIKeys, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Version: "test-version", Logger: logger,
		Metrics: gw.Metrics, Readiness: gw.Readiness,
	})
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &stack{Server: srv, cfg: cfg, logs: logs}, up
}

// A tool call through the Anthropic door: the model's call reaches the
// client as tool_use (its id re-prefixed toolu_), and the client's
// tool_result resumes the same upstream run.
func TestNativeBackendToolRoundTrip(t *testing.T) {
	s, up := newNativeStack(t, func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Paris"}}),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "Paris: " + rs[len(rs)-1].Text }),
		}, Usage: nativetest.Usage{Input: 42, Output: 7}}
	})
	tools := `"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4-5-20250929","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"weather?"}]}`,
		"anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, r.status, r.body)
	body := gjson.Parse(r.body)
	assert.Equal(t, "tool_use", body.Get("stop_reason").String())
	use := body.Get(`content.#(type=="tool_use")`)
	require.True(t, use.Exists(), r.body)
	assert.Equal(t, "get_weather", use.Get("name").String())
	assert.Equal(t, "Paris", use.Get("input.city").String())
	id := use.Get("id").String()
	assert.Regexp(t, `^toolu_[A-Za-z0-9]{24}$`, id)

	next := `{"model":"claude-sonnet-4-5-20250929","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"sunny"}]}]}`
	r = s.do(t, http.MethodPost, "/v1/messages", next, "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, r.status, r.body)
	body = gjson.Parse(r.body)
	assert.Equal(t, "end_turn", body.Get("stop_reason").String())
	assert.Equal(t, "Paris: sunny", body.Get(`content.#(type=="text").text`).String())
	assert.EqualValues(t, 42, body.Get("usage.input_tokens").Int())
	require.Len(t, up.Runs(), 1, "the result resumed the parked run")
	assert.Equal(t, "claude-4.5-sonnet", up.Runs()[0].Model(), "Claude Code's name reached the account's model")

	// The model list shows Cursor's display names.
	r = s.do(t, http.MethodGet, "/v1/models", "", "anthropic-version", "2023-06-01")
	assert.Equal(t, "Sonnet 4.5", gjson.Get(r.body, `data.#(id=="claude-4.5-sonnet").display_name`).String())
}

// Two parallel calls through the OpenAI door, streamed: both reach the
// client in one answer that ends with finish_reason tool_calls.
func TestNativeBackendParallelCallsStreamed(t *testing.T) {
	s, up := newNativeStack(t, func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.Text("Looking. "),
			nativetest.ToolCalls(
				nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Oslo"}},
				nativetest.Call{Tool: "get_weather", Args: map[string]any{"city": "Rome"}}),
			nativetest.Text("done"),
		}}
	})
	body := `{"model":"composer-2","stream":true,"messages":[{"role":"user","content":"both?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	r := s.chat(t, body)
	require.Equal(t, http.StatusOK, r.status, r.body)
	var text, finish string
	cities := map[string]bool{}
	args := map[int64]string{}
	for _, line := range strings.Split(r.body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		ch := gjson.Get(data, "choices.0")
		text += ch.Get("delta.content").String()
		for _, tc := range ch.Get("delta.tool_calls").Array() {
			args[tc.Get("index").Int()] += tc.Get("function.arguments").String()
		}
		if f := ch.Get("finish_reason").String(); f != "" {
			finish = f
		}
	}
	for _, a := range args {
		cities[gjson.Get(a, "city").String()] = true
	}
	assert.Equal(t, "Looking. ", text)
	assert.Equal(t, "tool_calls", finish)
	assert.Equal(t, map[string]bool{"Oslo": true, "Rome": true}, cities)
	assert.Len(t, up.Runs(), 1)
}

package services

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services/human"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
)

func TestFromConfig(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{
		"MODELS":          "gemini-3-flash, claude-sonnet-4.6-thinking",
		"MODEL_MAP":       "gemini-3-flash=google/gemini-3-flash-preview,claude-sonnet-4.6=anthropic/claude-x",
		"X_IS_HUMAN_MODE": "static:abc", "TIMEOUT": "7",
	})
	require.NoError(t, err)
	gw, err := FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Equal(t, []string{"gemini-3-flash", "gemini-3-flash-thinking", "claude-sonnet-4.6-thinking"}, gw.Catalog.Names())
	assert.Same(t, gw.Catalog, gw.Chat.Catalog(), "the core answers for the published catalog")
	m, ok := gw.Catalog.Resolve("gemini-3-flash-thinking")
	require.True(t, ok)
	assert.Equal(t, "google/gemini-3-flash-preview", m.Upstream)
	assert.True(t, m.Thinking)
	m, _ = gw.Catalog.Resolve("claude-sonnet-4.6-thinking")
	assert.Equal(t, "anthropic/claude-x", m.Upstream)

	assert.Equal(t, cfg.CursorAPIURL, gw.web.URL)
	assert.Equal(t, cfg.Timeout.Duration(), gw.web.IdleTimeout)
	v, err := gw.web.Human.Value(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "abc", v, "X_IS_HUMAN_MODE reaches the provider")
}

func TestFromConfigRejectsUnknownModels(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{"MODELS": "mystery-model"})
	require.NoError(t, err)
	_, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MODELS")
	assert.Contains(t, err.Error(), "MODEL_MAP", "the error says how to fix it")
}

// BROWSER_PROFILE picks one browser for everything: the upstream
// request's headers and the x-is-human environment.
func TestFromConfigBrowserProfile(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{"BROWSER_PROFILE": "chrome-macos", "X_IS_HUMAN_MODE": "random"})
	require.NoError(t, err)
	gw, err := FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	mac, err := human.ProfileByName("chrome-macos")
	require.NoError(t, err)
	assert.Equal(t, mac.UserAgent, gw.web.UserAgent)
	assert.Equal(t, mac.UserAgent, gw.web.Profile.Get("User-Agent"))
	assert.Equal(t, `"macOS"`, gw.web.Profile.Get("Sec-Ch-Ua-Platform"))
	assert.NotNil(t, gw.Human)

	cfg, err = config.FromMap(map[string]string{"BROWSER_PROFILE": "lynx"})
	require.NoError(t, err)
	_, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "BROWSER_PROFILE: unknown browser profile \"lynx\"")
}

// config cannot import human, so the default SCRIPT_URL is written twice.
func TestDefaultScriptURLAgrees(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, human.DefaultScriptURL, cfg.ScriptURL)
}

// With no MODELS the web gateway publishes the fallback at once (start-up
// never waits for the upstream) and learns the list in the background; with
// explicit MODELS it publishes them and learns nothing, checking them in
// the background only under MODEL_CHECK_INTERVAL.
func TestFromConfigModels(t *testing.T) {
	cases := []struct {
		name       string
		env        map[string]string
		served     []string
		source     string
		background bool
	}{
		{"auto", map[string]string{}, []string{"gemini-3-flash", "gemini-3-flash-thinking"}, "fallback", true},
		{"explicit", map[string]string{"MODELS": "claude-sonnet-4.6"}, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking"}, "configured", false},
		{"explicit, checked", map[string]string{"MODELS": "claude-sonnet-4.6", "MODEL_CHECK_INTERVAL": "60"}, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking"}, "configured", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["X_IS_HUMAN_MODE"] = "off"
			cfg, err := config.FromMap(tc.env)
			require.NoError(t, err)
			gw, err := FromConfig(cfg, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			assert.Equal(t, tc.served, gw.Catalog.Names())
			r := gw.Readiness.Report(context.Background())
			require.NotNil(t, r.Models)
			assert.Equal(t, tc.source, r.Models.Source)
			assert.Equal(t, tc.served, r.Models.Served)
			assert.Equal(t, tc.background, gw.background != nil)
		})
	}
}

// BACKEND=cursor learns the account's models from CURSOR_BACKEND_URL,
// takes tools natively, and still starts without a working key.
func TestFromConfigCursorBackend(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	cfg, err := config.FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": srv.URL, "TIMEOUT": "5",
	})
	require.NoError(t, err)
	gw, err := FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(gw.native.Close)
	assert.Equal(t, []string{"composer-2", "claude-4.5-sonnet"}, gw.Catalog.Names(), "the account's models, no invented twins")
	require.NotNil(t, gw.native)
	assert.True(t, upstream.IsNative(gw.native))
	public, ok := gw.Aliases.Resolve("claude-sonnet-4-5-20250929", gw.Catalog)
	assert.True(t, ok)
	assert.Equal(t, "claude-4.5-sonnet", public, "Claude Code's names reach the account's model")
	assert.NoError(t, gw.Readiness.Check(t.Context()))

	cfg, err = config.FromMap(map[string]string{"BACKEND": "cursor", "CURSOR_BACKEND_URL": srv.URL, "TIMEOUT": "5"})
	require.NoError(t, err)
	gw, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err, "no key: the gateway still starts")
	t.Cleanup(gw.native.Close)
	assert.Equal(t, []string{"auto"}, gw.Catalog.Names())
	err = gw.Readiness.Check(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CURSOR_API_KEY", "/ready says what to fix")
}

// A MCP_REMOTE_HOSTS entry that could never match stops the start, naming
// the entry, rather than doing nothing.
func TestFromConfigRejectsBadRemoteHosts(t *testing.T) {
	for _, hosts := range []string{"example.com:http", "https://mcp.example.com", "example.com:70000"} {
		cfg, err := config.FromMap(map[string]string{"MCP_REMOTE_HOSTS": hosts, "X_IS_HUMAN_MODE": "static:abc"})
		require.NoError(t, err)
		_, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
		require.Error(t, err, hosts)
		assert.Contains(t, err.Error(), "MCP_REMOTE_HOSTS")
		assert.Contains(t, err.Error(), hosts)
	}
	cfg, err := config.FromMap(map[string]string{"MCP_REMOTE_HOSTS": "mcp.example.com:8443,*.corp.example,10.0.0.0/8:9000", "X_IS_HUMAN_MODE": "static:abc"})
	require.NoError(t, err)
	_, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
}

// NewWebChat builds the web chat alone, whatever else the configuration
// asks of the gateway: it reaches neither Cursor's API (BACKEND=cursor
// learns the account's models at start) nor Cloud Agents nor an MCP
// server, and what only the gateway's other parts refuse (an MCP server's
// name) is no concern of doctor's or xih's.
func TestNewWebChatBuildsTheWebChatAlone(t *testing.T) {
	var calls atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "not the web chat", http.StatusServiceUnavailable)
	}))
	t.Cleanup(elsewhere.Close)
	cfg, err := config.FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": "a-key", "CURSOR_BACKEND_URL": elsewhere.URL, "TIMEOUT": "5",
		"CLOUD_AGENTS": "on", "CLOUD_API_URL": elsewhere.URL,
		"MCP_SERVERS":     `{"mcpServers": {"not a name": {"url": "` + elsewhere.URL + `/mcp"}}}`,
		"X_IS_HUMAN_MODE": "static:abc", "MODELS": "claude-sonnet-4.6",
	})
	require.NoError(t, err)

	web, err := NewWebChat(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Zero(t, calls.Load(), "nothing but the web chat is built: nothing else is reached")
	assert.Equal(t, cfg.CursorAPIURL, web.Client.URL, "the web chat, whatever BACKEND says")
	assert.Same(t, web.Human, web.Client.Human)
	v, err := web.Human.Value(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "abc", v)
	assert.Equal(t, []string{"claude-sonnet-4.6", "claude-sonnet-4.6-thinking"}, web.Catalog.Names())
	assert.Same(t, web.Drift, web.Client.Drift)

	// The gateway on the same configuration does reach them, and refuses.
	_, err = FromConfig(cfg, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "MCP_SERVERS")
	assert.NotZero(t, calls.Load())
}

// The web chat goes out through PROXY_URL's proxies as the gateway's does,
// and its checkpoint keeper is pinned to them.
func TestNewWebChatEgress(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{"X_IS_HUMAN_MODE": "off", "PROXY_URL": "http://127.0.0.1:1,http://127.0.0.1:2"})
	require.NoError(t, err)
	web, err := NewWebChat(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, web.Client.Egress)
	var labels []string
	for _, s := range web.Client.Egress.State() {
		labels = append(labels, s.Label)
	}
	assert.Equal(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, labels)
	require.NotNil(t, web.Client.Checkpoint)
	var egresses []string
	for _, s := range web.Client.Checkpoint.State() {
		egresses = append(egresses, s.Egress)
	}
	assert.Equal(t, labels, egresses)
}

package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

func TestBannerMasksSecrets(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{
		"API_KEY": "sk-very-secret-key-1234", "CURSOR_COOKIE": "_vcrcs=supersecretcookievalue",
		"PROXY_URL": "http://user:proxypass@127.0.0.1:3128,socks5://127.0.0.1:1080", "LOG_FORMAT": "json",
	})
	require.NoError(t, err)
	var out bytes.Buffer
	NewLogger(cfg, &out).Info("cursor2api listening", banner(cfg, []string{"claude-sonnet-4.6"})...)
	line := out.String()
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &fields), "LOG_FORMAT=json writes JSON lines: %s", line)
	for _, secret := range []string{"very-secret", "supersecretcookievalue", "proxypass"} {
		assert.NotContains(t, line, secret)
	}
	assert.Equal(t, []any{"sk-v*** (23 chars)"}, fields["api_keys"])
	assert.Equal(t, []any{"http://user:xxxxx@127.0.0.1:3128", "socks5://127.0.0.1:1080"}, fields["egress_proxies"])
	assert.Equal(t, []any{"claude-sonnet-4.6"}, fields["models"])
	assert.True(t, strings.HasPrefix(fields["cookie"].(string), "_vcr***"))

	cfg.LogLevel = "warn"
	out.Reset()
	NewLogger(cfg, &out).Info("cursor2api listening")
	assert.Empty(t, out.String(), "NewLogger logs at LOG_LEVEL")
}

// TestBannerNamesTheBackendAndEveryDoor: the start-up line says which
// back door answers (the cursor backend once called itself "web") and
// lists every front door the handler serves, Gemini's included.
func TestBannerNamesTheBackendAndEveryDoor(t *testing.T) {
	const key1, key2 = "crsr_first-secret-key-0001", "crsr_second-secret-key-0002"
	tests := []struct {
		name     string
		env      map[string]string
		backend  string
		upstream any
		keys     any
	}{
		{"web", map[string]string{}, "web", "https://cursor.com/api/chat", nil},
		{"agent", map[string]string{"BACKEND": "agent"}, "agent", nil, nil},
		{"cursor", map[string]string{"BACKEND": "cursor", "CURSOR_API_KEY": key1 + "," + key2}, "cursor", "Cursor's own hosts",
			[]any{"crsr*** (26 chars)", "crsr*** (27 chars)"}},
		{"cursor behind one URL", map[string]string{"BACKEND": "cursor", "CURSOR_API_KEY": key1, "CURSOR_BACKEND_URL": "http://127.0.0.1:9/"}, "cursor", "http://127.0.0.1:9",
			[]any{"crsr*** (26 chars)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"LOG_FORMAT": "json"}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := config.FromMap(env)
			require.NoError(t, err)
			var out bytes.Buffer
			NewLogger(cfg, &out).Info("cursor2api listening", banner(cfg, nil)...)
			line := out.String()
			var fields map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &fields), line)
			assert.Equal(t, tt.backend, fields["backend"])
			assert.Equal(t, tt.upstream, fields["upstream"])
			assert.Equal(t, tt.keys, fields["cursor_api_keys"])
			assert.NotContains(t, line, "secret-key", "keys are masked")
			doors, _ := fields["doors"].([]any)
			var names []string
			for _, d := range doors {
				name, _, _ := strings.Cut(d.(string), ":")
				names = append(names, name)
			}
			assert.Equal(t, []string{"openai", "anthropic", "responses", "gemini"}, names)
		})
	}
}

func TestMetricsAddrServesMetricsToo(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	gw, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "METRICS_ADDR": addr})
	resp, err := http.Get(gw + "/health")
	require.NoError(t, err, "the gateway is up")
	resp.Body.Close()

	resp, err = http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.Contains(string(body), "\ncursor2api_active_streams 0\n"), "the gateway's metrics")

	resp, err = http.Get("http://" + addr + "/v1/models")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the metrics listener serves nothing else")

	shutdown()
	require.NoError(t, serveResult(t, done, 10*time.Second, "Serve did not return"))
	_, err = http.Get("http://" + addr + "/metrics")
	assert.Error(t, err, "the metrics listener closes with the gateway")
}

func TestMetricsAddrInUseFailsAtStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	gw, _, done := startGateway(t, map[string]string{"TLS_FINGERPRINT": "off", "METRICS_ADDR": busy.Addr().String()})
	assert.ErrorContains(t, serveResult(t, done, 10*time.Second, "Serve did not fail"), "METRICS_ADDR")
	// An open listener would complete the handshake from its backlog.
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(gw, "http://"), 2*time.Second)
	if err == nil {
		c.Close()
	}
	assert.Error(t, err, "Serve closed the gateway's listener too")
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

func TestHealthcheckSubcommand(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off"})
	u, err := url.Parse(gw)
	require.NoError(t, err)
	assert.NoError(t, healthcheck("0.0.0.0", u.Port()), "a wildcard host is checked on loopback")
	assert.NoError(t, healthcheck("127.0.0.1", u.Port()))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	assert.ErrorContains(t, healthcheck("127.0.0.1", port), "/health", "nothing listens there")
}

func TestBannerMasksSecrets(t *testing.T) {
	cfg, err := config.FromMap(map[string]string{
		"API_KEY": "sk-very-secret-key-1234", "CURSOR_COOKIE": "_vcrcs=supersecretcookievalue",
		"PROXY_URL": "http://user:proxypass@127.0.0.1:3128,socks5://127.0.0.1:1080", "LOG_FORMAT": "json",
	})
	require.NoError(t, err)
	var out bytes.Buffer
	newLogger(cfg, &out, slog.LevelInfo).Info("cursor2api listening", banner(cfg, []string{"claude-sonnet-4.6"})...)
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
}

func TestOperationsSettingsAreValidated(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,nginx"}, `TRUSTED_PROXIES: "nginx" is neither an IP address nor a CIDR`},
		{map[string]string{"LOG_FORMAT": "xml"}, `LOG_FORMAT="xml": use text or json`},
		{map[string]string{"PROXY_URL": "http://127.0.0.1:3128,ftp://user:pw@127.0.0.1:21"}, `PROXY_URL: "ftp://user:xxxxx@127.0.0.1:21"`},
		{map[string]string{"METRICS_ADDR": "9090"}, `METRICS_ADDR="9090": use host:port`},
		{map[string]string{"PROXY_COOLDOWN": "0"}, `PROXY_COOLDOWN=0s: must be a positive number of seconds`},
	}
	for _, c := range cases {
		_, err := config.FromMap(c.env)
		assert.ErrorContains(t, err, c.want)
	}
	cfg, err := config.FromMap(map[string]string{"TRUSTED_PROXIES": " 10.0.0.0/8 , 127.0.0.1 ", "PROXY_URL": "http://a:1, socks5://b:2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/8", "127.0.0.1"}, cfg.TrustedProxies)
	assert.Equal(t, []string{"http://a:1", "socks5://b:2"}, cfg.ProxyURLs())
}

func TestMetricsAddrServesMetricsToo(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	gw, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "METRICS_ADDR": addr})
	require.NoError(t, healthcheck("127.0.0.1", strings.TrimPrefix(gw, "http://127.0.0.1:")), "the gateway is up")

	resp, err := http.Get("http://" + addr + "/metrics")
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
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return")
	}
	_, err = http.Get("http://" + addr + "/metrics")
	assert.Error(t, err, "the metrics listener closes with the gateway")
}

func TestMetricsAddrInUseFailsAtStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, _, done := startGateway(t, map[string]string{"TLS_FINGERPRINT": "off", "METRICS_ADDR": busy.Addr().String()})
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "METRICS_ADDR")
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not fail")
	}
}

package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

// startGateway serves the gateway env configures on loopback until cancel;
// done yields Serve's result. x-is-human defaults to a static value, since
// the default fetches a script from cursor.com and tests stay on loopback.
func startGateway(t *testing.T, env map[string]string) (url string, cancel context.CancelFunc, done <-chan error) {
	return startGatewayLogging(t, env, slog.New(slog.DiscardHandler))
}

// startGatewayLogging is startGateway with the gateway's logger.
func startGatewayLogging(t *testing.T, env map[string]string, logger *slog.Logger) (url string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	vars := map[string]string{"X_IS_HUMAN_MODE": "static:test-x-is-human", "STATE_DIR": t.TempDir()}
	if env["BACKEND"] != "agent" {
		// MODELS is explicit: with the default (auto) the gateway would
		// ask the fake web chat for its models in the background.
		vars["MODELS"] = "claude-sonnet-4.6"
	}
	maps.Copy(vars, env)
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	srv, err := New(cfg, logger, Options{Version: "test-version"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, errc
}

// serveResult is what Serve returned on done, waited for up to within;
// the test fails with failure if it does not come by then.
func serveResult(t *testing.T, done <-chan error, within time.Duration, failure string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatal(failure)
		return nil
	}
}

const streamBody = `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestShutdownDrainsInFlightStreams(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{
		Events: cursortest.Frames(nil, nil, []string{"one ", "two ", "three"}), Delay: 150 * time.Millisecond,
	}))
	url, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "SHUTDOWN_TIMEOUT": "10", "X_IS_HUMAN_MODE": "random"})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n') // the stream has started
	require.NoError(t, err)

	shutdown() // SIGTERM
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Contains(t, string(rest), "three", "the in-flight answer is finished")
	assert.True(t, strings.HasSuffix(string(rest), "data: [DONE]\n\n"))
	assert.NoError(t, serveResult(t, done, 5*time.Second, "Serve did not return after draining"))
	_, err = http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	assert.Error(t, err, "no new connections after shutdown")
}

func TestShutdownIsBounded(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{
		Events: []string{`{"type":"text-delta","id":"t","delta":"stuck"}`}, Hang: true,
	}))
	url, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "SHUTDOWN_TIMEOUT": "0.5", "X_IS_HUMAN_MODE": "random"})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n')
	require.NoError(t, err)

	start := time.Now()
	shutdown()
	assert.NoError(t, serveResult(t, done, 5*time.Second, "Serve did not return after SHUTDOWN_TIMEOUT"))
	assert.Less(t, time.Since(start), 3*time.Second)
	_, _ = io.Copy(io.Discard, r) // the connection was closed
	select {
	case <-up.Canceled():
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived the shutdown")
	}
}

// TestNewWiresTheConfiguration: the handler New builds has everything the
// configuration asks for, not only the doors (the benchmark once measured
// a gateway without them).
func TestNewWiresTheConfiguration(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hi")))
	logs := &cursortest.LogBuffer{}
	gw, _, _ := startGatewayLogging(t, map[string]string{
		"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "RESPONSES_STORE_MAX": "1", "TRUSTED_PROXIES": "127.0.0.1",
	}, slog.New(slog.NewTextHandler(logs, nil)))
	do := func(method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, gw+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	status, body := do(http.MethodGet, "/health", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "test-version", gjson.Get(body, "version").String(), "Options.Version: %s", body)
	assert.Equal(t, "static", gjson.Get(body, "x_is_human.mode").String(), "the x-is-human provider's health: %s", body)
	status, body = do(http.MethodGet, "/ready", "")
	assert.Equal(t, http.StatusOK, status, body)
	assert.True(t, gjson.Get(body, "ready").Bool(), "readiness: %s", body)

	// MODEL_ALIASES: Claude Code's dated ids reach a published model.
	status, body = do(http.MethodPost, "/v1/messages", `{"model":"claude-3-5-sonnet-20241022","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01", "X-Forwarded-For", "203.0.113.7")
	assert.Equal(t, http.StatusOK, status, body)
	logs.Await(t, "client=203.0.113.7") // TRUSTED_PROXIES: the access log names the proxied client

	// RESPONSES_STORE_MAX=1: the second response evicts the first.
	var ids []string
	for range 2 {
		status, body = do(http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi"}`)
		require.Equal(t, http.StatusOK, status, body)
		ids = append(ids, gjson.Get(body, "id").String())
	}
	status, body = do(http.MethodGet, "/v1/responses/"+ids[0], "")
	assert.Equal(t, http.StatusNotFound, status, "evicted: %s", body)
	status, body = do(http.MethodGet, "/v1/responses/"+ids[1], "")
	assert.Equal(t, http.StatusOK, status, body)

	status, body = do(http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, status)
	assert.Regexp(t, `cursor2api_requests_total\{[^}]*door="anthropic"[^}]*\} 1`, body, "the requests are counted")
	assert.Contains(t, body, "cursor2api_upstream_requests_total", "the upstream's attempts are counted")
}

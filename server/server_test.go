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

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

// startGateway serves the gateway env configures on a loopback port until
// the returned cancel is called; done yields Serve's result. Unless env
// says otherwise, x-is-human is a static value: the default would fetch
// the challenge script from cursor.com, and tests never leave the
// loopback.
func startGateway(t *testing.T, env map[string]string) (url string, cancel context.CancelFunc, done <-chan error) {
	return startGatewayLogging(t, env, slog.New(slog.DiscardHandler))
}

// startGatewayLogging is startGateway with the gateway's logger.
func startGatewayLogging(t *testing.T, env map[string]string, logger *slog.Logger) (url string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	vars := map[string]string{"X_IS_HUMAN_MODE": "static:test-x-is-human"}
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
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after draining")
	}
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
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after SHUTDOWN_TIMEOUT")
	}
	assert.Less(t, time.Since(start), 3*time.Second)
	_, _ = io.Copy(io.Discard, r) // the connection was closed
	select {
	case <-up.Canceled():
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived the shutdown")
	}
}

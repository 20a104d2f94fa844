package main

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

// startGateway serves the real wiring on a loopback port until the
// returned cancel is called; done yields serve's result. Unless env says
// otherwise, x-is-human is a static value: the default would fetch the
// challenge script from cursor.com, and tests never leave the loopback.
func startGateway(t *testing.T, env map[string]string) (url string, cancel context.CancelFunc, done <-chan error) {
	gin.SetMode(gin.TestMode)
	vars := map[string]string{"X_IS_HUMAN_MODE": "static:test-x-is-human"}
	maps.Copy(vars, env)
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
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
		t.Fatal("serve did not return after draining")
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
		t.Fatal("serve did not return after SHUTDOWN_TIMEOUT")
	}
	assert.Less(t, time.Since(start), 3*time.Second)
	_, _ = io.Copy(io.Discard, r) // the connection was closed
	select {
	case <-up.Canceled():
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived the shutdown")
	}
}

func TestXihReportsTheHeaderOrTheMissingGlobals(t *testing.T) {
	t.Setenv("X_IS_HUMAN_MODE", "random") // the check runs whatever the mode
	var out, errs strings.Builder
	code := xih([]string{"-file", "services/human/testdata/challenge.js", "-profile", "chrome-macos", "-budget", "3m"}, &out, &errs)
	require.Equal(t, 0, code, out.String()+errs.String())
	assert.Contains(t, out.String(), "profile: chrome-macos")
	assert.Regexp(t, `header:  \{"b":"fixture-b".*"vr":"fixture-vr"\}`, out.String())
	assert.Contains(t, out.String(), "missing: none")
	assert.Regexp(t, `time:    \d+`, out.String())

	out.Reset()
	code = xih([]string{"-file", "services/human/testdata/challenge_missing.js", "-budget", "3m"}, &out, &errs)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "error:   window.V_C[0]() rejected: ReferenceError: BroadcastChannel is not defined")
	assert.Contains(t, out.String(), "missing: 1 globals/properties the script read are not defined here:\n  BroadcastChannel\n")

	assert.Equal(t, 2, xih([]string{"-profile", "netscape-4"}, &out, &errs), "an unknown profile is a usage error")
	assert.Contains(t, errs.String(), "unknown browser profile \"netscape-4\": use one of chrome-macos, chrome-windows, chrome-windows-intel")
}

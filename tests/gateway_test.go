// Package tests holds the module's process-level and deployment tests:
// gateways as processes, behind real nginx and Caddy, sharing state; the
// shipped deployment files; and the import rules. Paths are relative to
// the repository's root, "..".
package tests

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/handlers/server"
)

// version is what the test gateways report, a dev build's.
const version = "dev"

// startGateway serves the gateway as server.Run does, on loopback, until
// cancel; done yields Serve's result. x-is-human defaults to a static value,
// since the default fetches a script from cursor.com and tests stay local.
func startGateway(t *testing.T, env map[string]string) (url string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	// MODELS is explicit: with the default (auto) the gateway would ask
	// the fake for its models in the background.
	vars := map[string]string{"X_IS_HUMAN_MODE": "static:test-x-is-human", "MODELS": "claude-sonnet-4.6", "STATE_DIR": t.TempDir()}
	maps.Copy(vars, env)
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	srv, err := server.New(cfg, slog.New(slog.DiscardHandler), server.Options{Version: version})
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

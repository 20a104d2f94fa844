package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// TestShutdownClosesWebSocketsAfterTheirTurn: http.Server's shutdown does
// not see upgraded connections; the gateway's does. A connection between
// turns closes at once with 1001 (going away), one in a turn gets its
// whole answer first, and Serve returns once both have closed.
func TestShutdownClosesWebSocketsAfterTheirTurn(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{
		Events: cursortest.Frames(nil, nil, []string{"one ", "two ", "three"}), Delay: 300 * time.Millisecond,
	}))
	gw, cancel, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "SHUTDOWN_TIMEOUT": "20"})
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	dial := func() *websocket.Conn {
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(gw, "http")+"/v1/responses", nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.CloseNow() })
		return conn
	}
	idle, busy := dial(), dial()
	require.NoError(t, busy.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"claude-sonnet-4.6","input":"hi"}`)))
	_, first, err := busy.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "response.created", gjson.GetBytes(first, "type").String(), "%s", first)

	cancel()
	_, _, err = idle.Read(ctx)
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "the idle connection goes at once: %v", err)
	var last string
	for {
		_, ev, err := busy.Read(ctx)
		if err != nil {
			assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "then the busy one: %v", err)
			break
		}
		last = gjson.GetBytes(ev, "type").String()
	}
	assert.Equal(t, "response.completed", last, "after its whole answer")
	require.NoError(t, serveResult(t, done, 20*time.Second, "Serve did not return after the sockets closed"))
}

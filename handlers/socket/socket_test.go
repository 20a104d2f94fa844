package socket

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsUpgrade(t *testing.T) {
	cases := []struct {
		name    string
		header  http.Header
		upgrade bool
	}{
		{"WebSocket", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, true},
		{"any case, token lists", http.Header{"Upgrade": {"WebSocket"}, "Connection": {"keep-alive, upgrade"}}, true},
		{"no Upgrade", http.Header{"Connection": {"Upgrade"}}, false},
		{"another protocol", http.Header{"Upgrade": {"h2c"}, "Connection": {"Upgrade"}}, false},
		{"no Connection: upgrade", http.Header{"Upgrade": {"websocket"}, "Connection": {"keep-alive"}}, false},
		{"plain GET", http.Header{}, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodGet, "/v1/responses", nil)
		r.Header = c.header
		assert.Equal(t, c.upgrade, IsUpgrade(r), c.name)
	}
}

// TestGroupShutdown: a group with no connection shuts down at once; one
// with a connection waits for it (bounded by ctx) and refuses new ones.
func TestGroupShutdown(t *testing.T) {
	g := NewGroup()
	require.True(t, g.join())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, g.Shutdown(ctx), context.DeadlineExceeded, "waits for the open connection")
	assert.False(t, g.join(), "refuses new ones")
	w := httptest.NewRecorder()
	_, err := Accept(w, httptest.NewRequest(http.MethodGet, "/", nil), Options{Group: g})
	assert.True(t, errors.Is(err, ErrShuttingDown), "%v", err)
	assert.Equal(t, 0, w.Body.Len(), "Accept wrote nothing: the door answers")
	g.leave()
	assert.NoError(t, g.Shutdown(context.Background()), "closed once the last one left")
	assert.NoError(t, NewGroup().Shutdown(context.Background()))
}

package webchat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/epilogue"
	"cursor2api/services/upstream"
)

// TestAttemptKeepsFinishedConnections counts the fake's connections over two
// requests: a finished reply's tail is drained in the epilogue, so the
// second request reuses the connection; an error, a gone client or an
// endless or oversized tail closes it.
func TestAttemptKeepsFinishedConnections(t *testing.T) {
	start := []string{`{"type":"start"}`, `{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"hi"}`}
	finish := cursortest.Finish("stop", nil)
	errStop := errors.New("the client left")
	cases := []struct {
		name  string
		reply cursortest.Response
		// stop makes the delivery fail, as a client that left does.
		stop      bool
		wantErr   bool
		wantConns int64
	}{
		// The delay makes the tail come after the finish frame was read.
		{"finished", cursortest.Response{Events: append(start, finish, "[DONE]"), Delay: 20 * time.Millisecond}, false, false, 1},
		{"ended by [DONE] alone", cursortest.Response{Events: append(start, "[DONE]"), Delay: 20 * time.Millisecond}, false, false, 1},
		{"tail that never ends", cursortest.Response{Events: append(start, finish), Hang: true}, false, false, 2},
		{"tail over the cap", cursortest.Response{Events: append(start, finish, strings.Repeat("x", 4*maxDrain), "[DONE]")}, false, false, 2},
		{"error frame", cursortest.Response{Events: append(start, `{"type":"error","errorText":"boom"}`), Hang: true}, false, true, 2},
		{"client left", cursortest.Response{Events: start, Hang: true}, true, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := cursortest.NewServer(t, cursortest.Always(tc.reply))
			c := testClient(up)
			c.IdleTimeout = 600 * time.Millisecond
			for range 2 {
				// The handler's epilogue, which runs once the answer is
				// written.
				ctx, after := epilogue.With(context.Background())
				began := time.Now()
				var got string
				_, err := c.Stream(ctx, upstream.Request{Model: "m", Messages: []models.Turn{{Role: models.RoleUser, Text: "hi"}}},
					func(d upstream.Delta) error {
						if tc.stop {
							return errStop
						}
						got += d.Text
						return nil
					})
				if tc.wantErr {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
					assert.Equal(t, "hi", got)
				}
				assert.Less(t, time.Since(began), c.IdleTimeout/2, "Stream returns without waiting for the reply's tail")
				after.Run()
				assert.Less(t, time.Since(began), c.IdleTimeout+time.Second, "the tail's wait is bounded by the idle timeout")
			}
			assert.Equal(t, tc.wantConns, up.Conns(), "connections the fake accepted for two requests")
		})
	}
}

// TestDrainWithoutAnEpilogue: a caller without an epilogue (the doctor, a
// test) gets the tail read before Stream returns, within the same bounds,
// and the connection kept.
func TestDrainWithoutAnEpilogue(t *testing.T) {
	start := []string{`{"type":"start"}`, `{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"hi"}`}
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Events: append(start, cursortest.Finish("stop", nil), "[DONE]"), Delay: 20 * time.Millisecond}))
	c := testClient(up)
	c.IdleTimeout = 600 * time.Millisecond
	for range 3 {
		_, err := c.Stream(context.Background(), upstream.Request{Model: "m", Messages: []models.Turn{{Role: models.RoleUser, Text: "hi"}}},
			func(upstream.Delta) error { return nil })
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), up.Conns(), "one connection for three requests")
}

package webchat

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/upstream"
)

// streamOf serves writes, each written and flushed apart, gate received
// from before each write after the first.
func streamOf(t *testing.T, gate <-chan struct{}, writes ...string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, s := range writes {
			if i > 0 && gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprint(w, s)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return &Client{HTTP: srv.Client(), URL: srv.URL, IdleTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}
}

func delta(kind, text string) string {
	return fmt.Sprintf("data: {\"type\":%q,\"id\":\"x\",\"delta\":%q}\n\n", kind, text)
}

func TestDeltasInHandAreMerged(t *testing.T) {
	burst := delta("reasoning-delta", "think ") + delta("reasoning-delta", "hard") + delta("text-delta", "Hel") +
		delta("text-delta", "lo") + ": comment\n\n" + delta("text-delta", ", world") + "data: {\"type\":\"finish\"}\n\n"
	c := streamOf(t, nil, burst)
	var got []upstream.Delta
	_, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
		got = append(got, d)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []upstream.Delta{
		{Kind: upstream.DeltaReasoning, Text: "think hard"},
		{Kind: upstream.DeltaText, Text: "Hello, world"},
	}, got, "one delta per run of a kind that arrived together, in order")
}

func TestDeltaIsNotHeldForMore(t *testing.T) {
	gate := make(chan struct{})
	c := streamOf(t, gate, delta("text-delta", "first"), delta("text-delta", "second")+"data: {\"type\":\"finish\"}\n\n")
	var got []string
	_, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
		got = append(got, d.Text)
		if d.Text == "first" {
			close(gate) // the second write waits for the first delta to be delivered
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "second"}, got)
}

func TestLongFrames(t *testing.T) {
	long := strings.Repeat("x", 3*readBufferSize)
	c := streamOf(t, nil, delta("text-delta", long)+"data: {\"type\":\"finish\"}\n\n")
	var got strings.Builder
	_, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
		got.WriteString(d.Text)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, long, got.String(), "a frame longer than the read buffer")

	tooLong := streamOf(t, nil, delta("text-delta", strings.Repeat("y", maxFrame+10)))
	_, err = tooLong.Stream(context.Background(), hiRequest, func(upstream.Delta) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "frame over")
}

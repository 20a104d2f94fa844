package webchat

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/upstream"
	"cursor2api/utils"
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

// TestDeltaRunReadsAsTheLoop holds the reply read through the client's
// loop (its one-pass run of deltas included) to what the general decoder
// reads of the same lines, on random streams of delta frames, other
// frames, comments, blank lines and bent prefixes, cut into random
// writes: the same texts, in the same order, whatever arrives together.
func TestDeltaRunReadsAsTheLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 60 {
		var stream strings.Builder
		var want []upstream.Delta
		for range r.IntN(40) {
			data := randomFrame(r)
			if strings.ContainsAny(string(data), "\r\n") {
				continue // a raw line break would split the frame: JSON has none
			}
			eol := []string{"\n\n", "\r\n\r\n", "\n"}[r.IntN(3)]
			switch r.IntN(10) {
			case 0:
				stream.WriteString(": comment\n")
				continue
			case 1:
				stream.WriteString("event: delta\ndata: " + string(data) + eol)
			case 2:
				stream.WriteString("data:" + string(data) + eol) // no space: the general loop's
			case 3:
				stream.WriteString("data:  " + string(data) + " " + eol)
			default:
				stream.WriteString("data: " + string(data) + eol)
			}
			if kind, text, ok := generalDelta(data); ok && text != "" && gjson.GetBytes(data, "type").String() != "finish" {
				want = append(want, upstream.Delta{Kind: kind, Text: text})
			}
			if gjson.GetBytes(data, "type").String() == "finish" {
				break
			}
		}
		stream.WriteString("data: {\"type\":\"finish\"}\n\n")
		all := stream.String()
		var writes []string
		for len(all) > 0 {
			n := min(len(all), 1+r.IntN(200))
			writes, all = append(writes, all[:n]), all[n:]
		}
		c := streamOf(t, nil, writes...)
		var got []upstream.Delta
		_, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
			got = append(got, d)
			return nil
		})
		require.NoError(t, err, "round %d", round)
		assert.Equal(t, merged(want), merged(got), "round %d: %q", round, writes)
	}
}

// merged joins consecutive deltas of a kind, which is all that arriving
// together changes.
func merged(ds []upstream.Delta) []upstream.Delta {
	var out []upstream.Delta
	for _, d := range ds {
		if n := len(out); n > 0 && out[n-1].Kind == d.Kind {
			out[n-1].Text += d.Text
			continue
		}
		out = append(out, d)
	}
	return out
}

// Frames with fields the reader does not read, frames of types it does
// not know, a line that is no JSON and an unknown finish reason: the
// answer is read from what it knows, and each unknown kind is noted once
// (the known parts of the AI SDK's stream are not), never its content.
func TestStreamToleratesUnknownFrames(t *testing.T) {
	body := strings.Join([]string{
		`data: {"type":"start","messageId":"m","newField":1}`,
		`data: {"type":"start-step"}`,
		`data: {"type":"data-usage-hint","data":{"x":1}}`,
		`data: {"type":"text-start","id":"t0","providerMetadata":{}}`,
		`data: {"type":"text-delta","id":"t0","delta":"Hel","providerMetadata":{"a":"b"}}`,
		`data: {"type":"text-delta","delta":"lo","id":"t0"}`,
		`data: {"type":"citation-delta","id":"c0","text":"private words"}`,
		`data: {"type":"citation-delta","id":"c1","text":"more"}`,
		`data: {"type":"tool-output-available","toolCallId":"x","output":"…"}`,
		`data: not json at all`,
		`event: something`,
		`data: {"type":"text-end","id":"t0"}`,
		`data: {"type":"finish-step"}`,
		`data: {"type":"finish","finishReason":"paused","messageMetadata":{"usage":{"inputTokens":3,"outputTokens":2,"cachedTokens":1}}}`,
		`data: [DONE]`,
	}, "\n\n") + "\n\n"
	c := streamOf(t, nil, body)
	var logs bytes.Buffer
	c.Drift = utils.NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	var text strings.Builder
	usage, err := c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
		require.Equal(t, upstream.DeltaText, d.Kind)
		text.WriteString(d.Text)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "Hello", text.String())
	require.NotNil(t, usage)
	assert.Equal(t, 5, usage.TotalTokens)
	assert.Equal(t, []utils.DriftNotice{
		{Component: "web chat", Kind: `finish reason "paused"`, Count: 1},
		{Component: "web chat", Kind: `frame type "citation-delta"`, Count: 2},
		{Component: "web chat", Kind: "frame without a type", Count: 1},
	}, c.Drift.Notices())
	assert.Equal(t, 3, strings.Count(logs.String(), "upstream format drift"), logs.String())
	assert.NotContains(t, logs.String(), "private words")
}

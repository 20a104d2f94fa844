package utils

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDriftLogsOncePerKind(t *testing.T) {
	var logs bytes.Buffer
	d := NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		d.Note("webchat", `frame type "x"`)
	}
	d.Note("vercel", `frame type "x"`)
	d.Note("webchat", `frame type "y"`)
	assert.Equal(t, 3, strings.Count(logs.String(), "upstream format drift"), "one line per component and kind")
	assert.Equal(t, []DriftNotice{
		{Component: "vercel", Kind: `frame type "x"`, Count: 1},
		{Component: "webchat", Kind: `frame type "x"`, Count: 3},
		{Component: "webchat", Kind: `frame type "y"`, Count: 1},
	}, d.Notices())
}

// An upstream that sends a new kind every time does not grow what is
// kept, nor the log.
func TestDriftBounded(t *testing.T) {
	var logs bytes.Buffer
	d := NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 10 * maxDriftKinds {
		d.Note("native", fmt.Sprintf("field %d %s", i, strings.Repeat("z", 1000)))
	}
	n := d.Notices()
	require.Len(t, n, maxDriftKinds+1)
	assert.LessOrEqual(t, strings.Count(logs.String(), "\n"), maxDriftKinds+1)
	for _, x := range n {
		assert.LessOrEqual(t, len(x.Kind), maxDriftKind+4)
	}
	var nilDrift *Drift
	nilDrift.Note("a", "b")
	assert.Empty(t, nilDrift.Notices())
}

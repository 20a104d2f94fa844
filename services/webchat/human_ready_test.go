package webchat

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyHuman counts the asks for its value and whether they had a
// deadline.
type readyHuman struct {
	ready    bool
	values   atomic.Int32
	deadline atomic.Bool
}

func (h *readyHuman) Value(ctx context.Context) (string, error) {
	h.values.Add(1)
	_, ok := ctx.Deadline()
	h.deadline.Store(ok)
	return "asked", nil
}

func (*readyHuman) Invalidate() {}

func (h *readyHuman) Ready() (string, bool) {
	if h.ready {
		return "at-hand", true
	}
	return "", false
}

// TestReadyHumanNeedsNoWait: a value at hand goes out as it is, without
// Value and its deadline; one that is not is asked for, under HumanWait.
func TestReadyHumanNeedsNoWait(t *testing.T) {
	for _, tc := range []struct {
		ready  bool
		header string
		asked  int32
	}{
		{true, "at-hand", 0},
		{false, "asked", 1},
	} {
		h := &readyHuman{ready: tc.ready}
		c := &Client{URL: "http://upstream.invalid/api/chat", Human: h}
		req, err := c.newRequest(context.Background(), hiRequest)
		require.NoError(t, err)
		assert.Equal(t, tc.header, req.Header.Get("X-Is-Human"))
		assert.Equal(t, tc.asked, h.values.Load())
		assert.Equal(t, tc.asked == 1, h.deadline.Load(), "Value is asked under HumanWait's deadline")
	}
	var _ ReadyHuman = StaticHuman("")
}

package webchat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/epilogue"
	"cursor2api/services/upstream"
)

func TestOverlap(t *testing.T) {
	cases := []struct {
		name, tail, next string
		final            bool
		n                int
		decided          bool
	}{
		{"no repeat", "the quick bro", "wn fox", false, 0, true},
		{"the cut word again", "the quick bro", "brown fox", false, 3, true},
		{"the last line again", "line one\nline tw", "line two\nline three", false, 7, true},
		{"a long repeat from anywhere", "xxabcdefghijklmnopqrstu", "cdefghijklmnopqrstuvw", false, 19, true},
		{"a short repeat mid-word is the text's own", "the quick bro", "own fox", false, 0, true},
		{"white space alone is no repeat", "a \n", "\nb", false, 0, true},
		{"could still grow: held", "the quick brown", "qu", false, 0, false},
		{"could still grow, but the stream ended", "the quick brown", "qu", true, 0, true},
		{"the whole answer repeated", "the quick", "the quick brown", false, 9, true},
		{"tool markup split anywhere", `text <tool_call>{"name":"re`, `<tool_call>{"name":"read"}</tool_call>`, false, 22, true},
		{"markup restarted at punctuation", `<invoke name="read_file">{"path":"`, `{"path":"a.go"}</invoke>`, false, 9, true},
		{"a mark restarted after a space", `f(x, "`, `"y")`, false, 1, true},
		{"a short match at punctuation mid-word is the text's own", `f(x`, `(y)`, false, 0, true},
		{"a short match mid-word after punctuation is the text's own", `a.bc`, `bcd`, false, 0, true},
		{"nothing so far", "", "abc", false, 0, true},
		{"nothing held", "abc", "", true, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, decided := overlap([]byte(tc.tail), []byte(tc.next), tc.final)
			assert.Equal(t, tc.decided, decided)
			if decided {
				assert.Equal(t, tc.n, n)
			}
		})
	}
}

// longAnswer is an answer of distinct words with the text tool protocol's
// markup in it, so that a repeat can only be the one the fake makes.
func longAnswer() string {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "word%03d ", i)
		if i%9 == 8 {
			b.WriteString("\n<invoke name=\"read_file\">{\"path\":\"é/ü.go\"}</invoke>\n")
		}
	}
	return b.String()
}

// collect streams through c and returns the text, whether the stream
// ended with DeltaLength, and the usage.
func collect(t *testing.T, c *Client, ctx context.Context) (string, bool, *models.Usage, error) {
	t.Helper()
	var b strings.Builder
	length := false
	usage, err := c.Stream(ctx, hiRequest, func(d upstream.Delta) error {
		require.False(t, length, "nothing after DeltaLength")
		switch d.Kind {
		case upstream.DeltaText:
			b.WriteString(d.Text)
		case upstream.DeltaLength:
			length = true
		}
		return nil
	})
	return b.String(), length, usage, err
}

func TestContinuation(t *testing.T) {
	full := longAnswer()
	const capBytes = 200
	segments := (len(full) + capBytes - 1) / capBytes
	cases := []struct {
		name    string
		overlap int
	}{
		{"no repeat", 0},
		{"the cut word again", cursortest.RestartWord},
		{"a long repeat", 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := cursortest.NewServer(t, cursortest.LengthCapped(full, capBytes, tc.overlap, &cursortest.Usage{Input: 100, Output: 50}))
			c := testClient(up)
			c.MaxContinuations = segments
			// As the handler runs it: the last reply's tail is read in the
			// epilogue, a cut one's before its continuation.
			ctx, after := epilogue.With(context.Background())
			got, length, usage, err := collect(t, c, ctx)
			require.NoError(t, err)
			after.Run()
			assert.Equal(t, int64(1), up.Conns(), "every continuation reuses the connection")
			assert.Equal(t, full, got, "the answer whole, nothing lost or repeated")
			assert.False(t, length, "the answer ended")
			reqs := up.Requests()
			require.Len(t, reqs, segments)
			assert.Equal(t, &models.Usage{InputTokens: 100 * segments, OutputTokens: 50 * segments, TotalTokens: 150 * segments}, usage, "usage adds up")
			last := reqs[len(reqs)-1].Messages
			require.Len(t, last, len(hiRequest.Messages)+2)
			assert.Equal(t, "assistant", last[len(last)-2].Role)
			assert.True(t, strings.HasPrefix(full, last[len(last)-2].Text) && len(last[len(last)-2].Text) >= capBytes*(segments-1)-8,
				"the continuation carries the text so far")
			assert.Equal(t, cursortest.Message{Role: "user", Text: continueInstruction}, last[len(last)-1])
			for i, m := range hiRequest.Messages {
				assert.Equal(t, m.Text, last[i].Text, "the conversation itself is sent again")
			}
		})
	}
}

func TestContinuationsSpent(t *testing.T) {
	full := longAnswer()
	for _, max := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			up := cursortest.NewServer(t, cursortest.LengthCapped(full, 200, cursortest.RestartWord, &cursortest.Usage{Input: 10, Output: 5}))
			c := testClient(up)
			c.MaxContinuations = max
			got, length, usage, err := collect(t, c, context.Background())
			require.NoError(t, err)
			assert.True(t, length, "a cut answer ends with DeltaLength, never silently")
			assert.Len(t, up.Requests(), max+1)
			assert.True(t, strings.HasPrefix(full, got) && len(got) > 200*max, "the text so far, stitched: %q", got)
			assert.Equal(t, 15*(max+1), usage.TotalTokens)
		})
	}
}

func TestLengthWithoutText(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Persona("length", nil, nil)))
	c := testClient(up)
	c.MaxContinuations = 3
	got, length, _, err := collect(t, c, context.Background())
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.True(t, length)
	assert.Len(t, up.Requests(), 1, "nothing to continue")
}

func TestContinuationRetriedOnce(t *testing.T) {
	full := longAnswer()
	capped := cursortest.LengthCapped(full, 300, 0, nil)
	up := cursortest.NewServer(t, func(n int, req cursortest.Request) cursortest.Response {
		if n == 1 {
			return cursortest.Response{Status: 503, Body: "busy"}
		}
		return capped(n, req)
	})
	c := testClient(up)
	c.MaxContinuations = 5
	got, length, _, err := collect(t, c, context.Background())
	require.NoError(t, err)
	assert.False(t, length)
	assert.Equal(t, full, got)
}

func TestCancelMidContinuation(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	full := longAnswer()
	capped := cursortest.LengthCapped(full, 200, 0, nil)
	up := cursortest.NewServer(t, func(n int, req cursortest.Request) cursortest.Response {
		if n == 0 {
			return capped(n, req)
		}
		cancel() // the client leaves while the continuation is under way
		r := capped(n, req)
		r.Hang = true
		r.Events = r.Events[:3]
		return r
	})
	c := testClient(up)
	c.MaxContinuations = 3
	done := make(chan error, 1)
	go func() {
		_, _, _, err := collect(t, c, ctx)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.True(t, errors.Is(err, context.Canceled), "the caller's own error: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after the cancel")
	}
	select {
	case <-up.Canceled():
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not abandoned")
	}
	up.Close()
	c.HTTP.CloseIdleConnections()
}

// TestContinuationEveryCut cuts the answer at many places, inside words,
// markup and two-byte characters alike: the stitched answer is always
// the whole one.
func TestContinuationEveryCut(t *testing.T) {
	full := longAnswer()
	// (A short repeat that starts inside a word is not told from the
	// text's own next characters, and is kept: see plausibleRepeat.)
	for _, overlap := range []int{0, cursortest.RestartWord, 17, 60} {
		for capBytes := 61; capBytes < 260; capBytes += 7 {
			up := cursortest.NewServer(t, cursortest.LengthCapped(full, capBytes, overlap, nil))
			c := testClient(up)
			c.MaxContinuations = 20
			got, length, _, err := collect(t, c, context.Background())
			require.NoError(t, err, "overlap %d, cap %d", overlap, capBytes)
			require.False(t, length)
			require.Equal(t, full, got, "overlap %d, cap %d", overlap, capBytes)
		}
	}
}

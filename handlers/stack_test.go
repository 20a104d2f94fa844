package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cursor2api/services/cursortest"
)

// gateway is newStack seen through the names the feature tests use.
type gateway struct {
	*httptest.Server
	upstream *cursortest.Server
}

func newGateway(t testing.TB, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *gateway {
	t.Helper()
	s := newStack(t, env, reply)
	return &gateway{Server: s.Server, upstream: s.up}
}

// replyWith answers with the given text deltas, with TRIGGER replaced by the
// trigger the gateway put in its system prompt, as a compliant model would.
func replyWith(deltas ...string) func(int, cursortest.Request) cursortest.Response {
	return replySeq([][]string{deltas})
}

// replySeq answers the n-th request with the n-th list of deltas.
func replySeq(turns [][]string) func(int, cursortest.Request) cursortest.Response {
	return paced(turns, time.Millisecond)
}

// paced is replySeq with delay before each frame.
func paced(turns [][]string, delay time.Duration) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		trigger := ""
		if len(req.Messages) > 0 {
			trigger = callTriggerRE.FindString(req.Messages[0].Text)
		}
		deltas := turns[min(n, len(turns)-1)]
		out := make([]string, len(deltas))
		for i, d := range deltas {
			out[i] = strings.ReplaceAll(d, "TRIGGER", trigger)
		}
		return cursortest.Response{Events: cursortest.Frames(&cursortest.Usage{Input: 120, Output: 30}, nil, out), Delay: delay}
	}
}

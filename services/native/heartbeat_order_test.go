package native

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
)

// TestHeartbeatFollowsTheRunRequest: the server takes nothing before a
// run's run_request, so the heartbeat starts only once it is sent; with
// a beat due every microsecond, one started with the run would get ahead
// of it while the request (a long conversation) is encoded. Over SSE the
// request is encoded before the send's lock is taken, the widest window
// (a beat every microsecond keeps a bidi stream busy for seconds under
// -race).
func TestHeartbeatFollowsTheRunRequest(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hello")}, Usage: nativetest.Usage{Input: 1, Output: 1}}
	}})
	c := newClient(t, srv, TransportSSE, func(o *Options) { o.HeartbeatEvery = time.Microsecond })
	req := upstream.Request{Model: "composer-2", Conversation: []models.Message{user(strings.Repeat("hi ", 1<<18))}}
	for range 5 {
		got, _, err := stream(t, t.Context(), c, req)
		require.NoError(t, err)
		require.Equal(t, "Hello", got.text)
	}
}

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

// TestHeartbeatFollowsTheRunRequest: the server takes nothing before
// run_request, so the heartbeat must start after it is sent. A beat every
// microsecond would overtake a long request being encoded, most easily
// over SSE, which encodes before taking the send lock.
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

package native

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/epilogue"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
)

// lingering is a fake whose streams stay open after turn_ended and the
// checkpoint until release is closed (or the client leaves).
func lingering(t *testing.T, release <-chan struct{}) *nativetest.Server {
	return nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{
			Steps: []nativetest.Step{nativetest.Text("Hello", ", world")},
			Usage: nativetest.Usage{Input: 10, Output: 4},
			After: []nativetest.Step{nativetest.Linger(release)},
		}
	}})
}

// onlyRun is the fake's one run.
func onlyRun(t *testing.T, srv *nativetest.Server) nativetest.Run {
	t.Helper()
	runs := srv.Runs()
	require.Len(t, runs, 1)
	return runs[0]
}

// TestAnswerDoesNotWaitForTheTail: a stream that lingers after
// turn_ended does not hold the answer. Stream returns the whole answer
// and its usage while the fake still holds its stream open (the fake is
// released only after that), and the tail is read to the stream's end in
// the request's epilogue: the fake's run ends cleanly, not cancelled.
func TestAnswerDoesNotWaitForTheTail(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			release := make(chan struct{})
			srv := lingering(t, release)
			// The idle timeout is far above the tail's bound: only the
			// end of the stream ends the tail here.
			c := newClient(t, srv, tr, func(o *Options) { o.IdleTimeout = time.Minute })
			ctx, after := epilogue.With(t.Context())
			got, usage, err := stream(t, ctx, c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
			require.NoError(t, err)
			assert.Equal(t, "Hello, world", got.text)
			require.NotNil(t, usage, "the usage of turn_ended comes with the answer")
			assert.Equal(t, models.Usage{InputTokens: 10, OutputTokens: 4, TotalTokens: 14}, *usage)
			assert.False(t, onlyRun(t, srv).Ended, "the answer came while the upstream stream lingered")

			close(release)
			after.Run()
			r := onlyRun(t, srv)
			assert.True(t, r.Ended, "the epilogue returns once the stream has ended")
			assert.NoError(t, r.Err, "the tail was read to the stream's end, not cut")
			assert.NotNil(t, r.Checkpoint)
			assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestTailIsBounded: a tail that never ends is cut at its bound (here
// the idle timeout, shorter than turnTail), in the epilogue or, for a
// caller without one, before Stream returns; the upstream run is
// cancelled either way.
func TestTailIsBounded(t *testing.T) {
	for _, withEpilogue := range []bool{true, false} {
		name := map[bool]string{true: "in the epilogue", false: "without an epilogue"}[withEpilogue]
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			srv := lingering(t, release)
			const idle = 300 * time.Millisecond
			c := newClient(t, srv, TransportHTTP2, func(o *Options) { o.IdleTimeout = idle })
			ctx := t.Context()
			var after *epilogue.Epilogue
			if withEpilogue {
				ctx, after = epilogue.With(ctx)
			}
			start := time.Now()
			got, usage, err := stream(t, ctx, c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
			require.NoError(t, err)
			assert.Equal(t, "Hello, world", got.text)
			require.NotNil(t, usage)
			if withEpilogue {
				assert.False(t, onlyRun(t, srv).Ended, "the answer came while the upstream stream lingered")
				after.Run()
			}
			assert.Less(t, time.Since(start), turnTail, "the tail is bounded by the idle timeout when it is shorter than turnTail")
			assert.Eventually(t, func() bool { r := onlyRun(t, srv); return r.Ended && connect.CodeOf(r.Err) == connect.CodeCanceled },
				5*time.Second, 10*time.Millisecond, "the lingering run was cancelled upstream")
			assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestClientLeavingCancelsTheTail: a client that leaves while the tail
// is read ends the read at once, and the upstream run with it.
func TestClientLeavingCancelsTheTail(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			srv := lingering(t, release)
			c := newClient(t, srv, tr, func(o *Options) { o.IdleTimeout = time.Minute })
			reqCtx, leave := context.WithCancel(t.Context())
			ctx, after := epilogue.With(reqCtx)
			got, _, err := stream(t, ctx, c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
			require.NoError(t, err)
			assert.Equal(t, "Hello, world", got.text)

			ran := make(chan struct{})
			go func() {
				defer close(ran)
				after.Run()
			}()
			leave()
			select {
			case <-ran:
			case <-time.After(turnTail / 2):
				t.Fatal("the tail's read went on after the client left")
			}
			assert.Eventually(t, func() bool { r := onlyRun(t, srv); return r.Ended && connect.CodeOf(r.Err) == connect.CodeCanceled },
				5*time.Second, 10*time.Millisecond, "the upstream run was cancelled with the request")
			assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestStreamEndingAfterTurnEndedIsDone: an error at the stream's end
// after turn_ended does not undo the answer (the turn is complete).
func TestStreamEndingAfterTurnEndedIsDone(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{
			Steps: []nativetest.Step{nativetest.Text("fine")},
			Usage: nativetest.Usage{Input: 1, Output: 1},
			After: []nativetest.Step{nativetest.Fail(connect.NewError(connect.CodeInternal, errors.New("late trouble")))},
		}
	}})
	c := newClient(t, srv, TransportSSE)
	ctx, after := epilogue.With(t.Context())
	got, usage, err := stream(t, ctx, c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "fine", got.text)
	require.NotNil(t, usage)
	after.Run()
	assert.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
}

package native

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
)

// TestRunsKeepTheirConnections counts dials: once warm, runs over h2c and
// SSE reuse pooled connections, since every response is read to its end
// (issue 30). A heartbeat every millisecond tests that an in-flight
// BidiAppend is answered before the run ends, not cut (which would close it).
func TestRunsKeepTheirConnections(t *testing.T) {
	const runs = 50
	for _, tc := range []struct {
		transport string
		heartbeat time.Duration
	}{
		{TransportHTTP2, 50 * time.Millisecond}, {TransportSSE, 50 * time.Millisecond},
		{TransportHTTP2, time.Millisecond}, {TransportSSE, time.Millisecond},
	} {
		tr := tc.transport
		t.Run(fmt.Sprintf("%s heartbeat %v", tr, tc.heartbeat), func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hello", ", world")}, Usage: nativetest.Usage{Input: 1, Output: 2}}
			}})
			var dials atomic.Int64
			counted := func(o *Options) {
				o.HeartbeatEvery = tc.heartbeat
				for _, hc := range []*http.Client{o.HTTP, o.HTTP2} {
					var d net.Dialer
					hc.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
						dials.Add(1)
						return d.DialContext(ctx, network, addr)
					}
				}
			}
			c := newClient(t, srv, tr, counted)
			req := upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}}
			_, _, err := stream(t, t.Context(), c, req) // warm: token, catalog, first connections
			require.NoError(t, err)
			warm := dials.Load()
			for range runs {
				got, _, err := stream(t, t.Context(), c, req)
				require.NoError(t, err)
				require.Equal(t, "Hello, world", got.text)
			}
			assert.LessOrEqual(t, dials.Load()-warm, int64(1), "dials over %d sequential runs after %d to warm up", runs, warm)
		})
	}
}

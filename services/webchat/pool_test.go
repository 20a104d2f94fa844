package webchat

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlainUpstreamKeepsItsConnections sends bursts of concurrent requests
// to a plain http:// upstream, with either fingerprint: the second burst
// reuses the first burst's connections instead of dialling anew (Go's
// default keeps two idle connections per host), through Go's own
// transport (nothing to fingerprint without TLS).
func TestPlainUpstreamKeepsItsConnections(t *testing.T) {
	for _, fp := range []string{FingerprintChrome, FingerprintOff} {
		t.Run(fp, func(t *testing.T) {
			var dials atomic.Int64
			release := make(chan struct{})
			var arrived sync.WaitGroup
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived.Done()
				<-release
				_, _ = io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					dials.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			rt, err := NewTransport(fp, nil, nil)
			require.NoError(t, err)
			client := &http.Client{Transport: rt}
			const burst = 8
			for round := range 2 {
				arrived.Add(burst)
				var done sync.WaitGroup
				for range burst {
					done.Go(func() {
						resp, err := client.Get(srv.URL)
						if assert.NoError(t, err) {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					})
				}
				arrived.Wait() // all in flight at once
				release <- struct{}{}
				for range burst - 1 {
					release <- struct{}{}
				}
				done.Wait()
				assert.Equal(t, int64(burst), dials.Load(), "round %d: connections reused", round)
			}
		})
	}
}

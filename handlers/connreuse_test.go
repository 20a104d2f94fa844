package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// TestUpstreamConnectionReuse counts the connections the fake upstream
// accepts: a finished reply's connection goes back to the gateway's pool
// (its tail, "[DONE]" and the chunked body's end, is read), so that the
// next request does not pay a dial. Without the drain, every request
// dialled anew.
func TestUpstreamConnectionReuse(t *testing.T) {
	const (
		sequential = 200
		workers    = 50
		perWorker  = 4 // a worker's later requests reuse its connection
	)
	deltas := make([]string, 100)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("w%d ", i)
	}
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) {
				s := newStack(t, nil, cursortest.Always(cursortest.Text(&cursortest.Usage{Input: 2, Output: 100}, deltas...)))
				req := door.request("claude-sonnet-4.6", "Say the words.", stream, false)
				ask := func() error {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					resp := req.send(t, ctx, s)
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					if err != nil {
						return err
					}
					if resp.StatusCode != http.StatusOK {
						return fmt.Errorf("status %d: %s", resp.StatusCode, body)
					}
					// The words as the door escapes them: none needs escaping.
					if !strings.Contains(strings.ReplaceAll(string(body), `"`, ""), "w99") {
						return fmt.Errorf("the answer lacks the last word: %.300s", body)
					}
					return nil
				}

				before := s.up.Conns()
				for range sequential {
					require.NoError(t, ask())
				}
				// At most 1 % of the requests may dial anew (the first does).
				dialled := s.up.Conns() - before
				t.Logf("%d sequential requests: %d new upstream connections", sequential, dialled)
				assert.LessOrEqual(t, dialled, int64(sequential/100), "new upstream connections over %d sequential requests", sequential)

				// Concurrent clients: the first round warms the pool to a
				// connection per client, as on a gateway that has been
				// running; in the second, every request should find one.
				concurrent := func() int64 {
					before := s.up.Conns()
					var wg sync.WaitGroup
					errs := make(chan error, workers*perWorker)
					for range workers {
						wg.Go(func() {
							for range perWorker {
								if err := ask(); err != nil {
									errs <- err
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						require.NoError(t, err)
					}
					return s.up.Conns() - before
				}
				// One round may not have all its clients in flight at once:
				// the pool is warm once a round dials nothing (or grows no
				// more than a round of concurrent clients can).
				var warm int64
				for range 5 {
					n := concurrent()
					warm += n
					if n == 0 {
						break
					}
				}
				assert.LessOrEqual(t, warm, int64(2*workers), "new upstream connections while %d concurrent clients warm the pool", workers)
				dialled = concurrent()
				t.Logf("%d requests by %d concurrent clients: %d new upstream connections (%d while warming)", workers*perWorker, workers, dialled, warm)
				assert.LessOrEqual(t, dialled, int64(workers*perWorker/20), "new upstream connections over %d streams by %d concurrent clients, the pool warm", workers*perWorker, workers)
			})
		}
	}
}

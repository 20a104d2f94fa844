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

				before = s.up.Conns()
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
				// At most one connection per concurrent stream, and a
				// small margin.
				dialled = s.up.Conns() - before
				t.Logf("%d requests by %d concurrent clients: %d new upstream connections", workers*perWorker, workers, dialled)
				assert.LessOrEqual(t, dialled, int64(workers+workers/10), "new upstream connections over %d streams by %d concurrent clients", workers*perWorker, workers)
			})
		}
	}
}

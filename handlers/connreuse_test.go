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

// TestUpstreamConnectionReuse proves a finished reply's connection goes
// back to the pool, its tail ("[DONE]", the chunked end) read, by counting
// the fake's connections. Without the drain, every request dialled anew.
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
				got := reuseLoad{sequential: sequential, workers: workers, perWorker: perWorker}.run(t, s, req, "w99", s.up.Conns)
				// At most 1 % of the requests may dial anew (the first does).
				assert.LessOrEqual(t, got.sequential, int64(sequential/100), "new upstream connections over %d sequential requests", sequential)
				assert.LessOrEqual(t, got.warm, int64(2*workers), "new upstream connections while %d concurrent clients warm the pool", workers)
				assert.LessOrEqual(t, got.measured, int64(workers*perWorker/20), "new upstream connections over %d streams by %d concurrent clients, the pool warm", workers*perWorker, workers)
			})
		}
	}
}

// reuseLoad is the load the connection-reuse tests put on a gateway:
// sequential requests, then rounds of concurrent clients.
type reuseLoad struct{ sequential, workers, perWorker int }

// reuseCount is what a reuseLoad cost in new upstream connections: over
// the sequential requests, while concurrent rounds warmed the pool (until
// one dialled nothing, at most five), and in one more concurrent round.
type reuseCount struct{ sequential, warm, measured int64 }

// run puts the load on s, each request req, whose answer must end with
// lastWord; conns counts the connections the fake upstream accepted.
func (l reuseLoad) run(t *testing.T, s *stack, req doorRequest, lastWord string, conns func() int64) reuseCount {
	t.Helper()
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
		if !strings.Contains(strings.ReplaceAll(string(body), `"`, ""), lastWord) {
			return fmt.Errorf("the answer lacks the last word: %.300s", body)
		}
		return nil
	}
	var got reuseCount
	before := conns()
	for range l.sequential {
		require.NoError(t, ask())
	}
	got.sequential = conns() - before
	t.Logf("%d sequential requests: %d new upstream connections (%d before)", l.sequential, got.sequential, before)

	concurrent := func() int64 {
		before := conns()
		var wg sync.WaitGroup
		errs := make(chan error, l.workers*l.perWorker)
		for range l.workers {
			wg.Go(func() {
				for range l.perWorker {
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
		return conns() - before
	}
	// One round may not have all its clients in flight at once: the pool
	// is warm once a round dials nothing.
	for range 5 {
		n := concurrent()
		got.warm += n
		if n == 0 {
			break
		}
	}
	got.measured = concurrent()
	t.Logf("%d requests by %d concurrent clients: %d new upstream connections (%d while warming)", l.workers*l.perWorker, l.workers, got.measured, got.warm)
	return got
}

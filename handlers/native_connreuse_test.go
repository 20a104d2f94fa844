package handlers

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// TestNativeUpstreamConnectionReuse is TestUpstreamConnectionReuse on the
// native back door. Over HTTP/2 one connection carries every run; over
// HTTP/1.1 a run holds two (its RunSSE stream and its appends), and both
// go back to the pool, which Go's default of two idle per host is too
// small for: 50 clients would cost three new connections a request.
func TestNativeUpstreamConnectionReuse(t *testing.T) {
	sequential, workers, doors := 200, 50, agentDoors
	if raceDetector {
		// Under -race the full load took minutes. Half the requests, 20
		// clients and one door still show a re-dial per run.
		sequential, workers, doors = 100, 20, agentDoors[:1]
	}
	const perWorker = 4 // a worker's later requests find the pool warm
	transports := []struct {
		name  string
		doors []agentDoor
		// warm bounds the new connections while the concurrent clients
		// warm the pool, concurrent those of the measured round.
		warm, concurrent int64
	}{
		// One connection, made by the first run, carries them all.
		{name: "http2", doors: doors, warm: 1, concurrent: int64(workers * perWorker / 20)},
		// Warming: a stream's and an append's connection per run, with
		// slack for one on its way back to the pool. Measured round: at
		// most one per run (usually 0 to 2 of 200). One door keeps the
		// time down under -race; doors change nothing upstream.
		{name: "sse", doors: agentDoors[:1], warm: int64(3 * workers), concurrent: int64(workers * perWorker)},
	}
	deltas := make([]string, 20) // fewer than TestUpstreamConnectionReuse's: four layers of framing under -race
	for i := range deltas {
		deltas[i] = fmt.Sprintf("w%d ", i)
	}
	script := func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text(deltas...)}, Usage: nativetest.Usage{Input: 2, Output: 20}}
	}
	for _, tr := range transports {
		for _, door := range tr.doors {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tr.name, door.name, stream), func(t *testing.T) {
					s, up := newNativeStackWith(t, nativetest.Options{Script: script}, map[string]string{"CURSOR_TRANSPORT": tr.name})
					req := door.request("composer-2", "Say the words.", stream, false)
					// The gateway exchanged the key and learnt the models at
					// start, over HTTP/1.1; the first run dials (its h2c
					// connection, or the one its appends take while its
					// stream holds the first).
					got := reuseLoad{sequential: sequential, workers: workers, perWorker: perWorker}.run(t, s, req, "w19", up.Conns)
					// At most 1 % of the requests may dial anew (the first does).
					assert.LessOrEqual(t, got.sequential, int64(sequential/100), "new upstream connections over %d sequential requests", sequential)
					assert.LessOrEqual(t, got.warm, tr.warm, "new upstream connections while %d concurrent clients warm the pool", workers)
					assert.LessOrEqual(t, got.measured, tr.concurrent, "new upstream connections over %d runs by %d concurrent clients, the pool warm", workers*perWorker, workers)
				})
			}
		}
	}
}

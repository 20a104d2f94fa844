package responses

import (
	"sync"
	"time"

	"cursor2api/services/state"
)

// writeBehind lets Put return before its write lands, for an engine no
// other process reads (the embedded file): each write is a transaction
// synced to disk, about a millisecond that the answer's end would
// otherwise wait for. A write waiting here is what Get and Delete see of
// its response, so this process reads its own writes at once; another
// process cannot read the file while this one holds it.
//
// A writer goroutine runs while writes wait, and ends when none does; it
// hands the engine every waiting write at once and in order, which the
// file commits in one transaction (state.Applier). Close waits for it.
type writeBehind struct {
	// write applies ops in order: a value under its key, or, when the
	// value is nil, the key forgotten; a failure is the state queue's to
	// retry.
	write func(ops []state.Op)

	mu      sync.Mutex
	pending map[string]*waiting // by id, the newest write not landed yet
	order   []string            // the ids waiting to be handed over, in order
	running bool
	closed  bool
	wg      sync.WaitGroup
	seq     uint64
}

// waiting is a write that has not landed: its value, or nil for a delete.
type waiting struct {
	value  []byte
	seq    uint64 // tells a newer write to the same id from this one
	queued bool   // in order, not yet handed to the engine
}

func newWriteBehind(write func(ops []state.Op)) *writeBehind {
	return &writeBehind{write: write, pending: map[string]*waiting{}}
}

// maxBehind bounds the writes waiting: past it a Put writes at once, and
// waits for the engine like any other, rather than let memory grow.
const maxBehind = 4096

// add queues a write; it reports false after close, or when too many
// wait, and the caller then writes itself.
func (w *writeBehind) add(id string, value []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.pending) >= maxBehind && w.pending[id] == nil {
		return false
	}
	w.seq++
	p := w.pending[id]
	if p == nil {
		p = &waiting{}
		w.pending[id] = p
	}
	p.value, p.seq = value, w.seq
	if !p.queued {
		p.queued = true
		w.order = append(w.order, id)
	}
	if !w.running {
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
	return true
}

// get returns the write waiting for id: its value (nil for a delete),
// and whether there is one.
func (w *writeBehind) get(id string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[id]
	if !ok {
		return nil, false
	}
	return p.value, true
}

// gather is how long the writer lets writes gather before it hands them
// over: each commit of the file is synced to disk, whose kernel time a
// commit per answer would spend again and again; a response waits this
// much longer to be durable, and is read back meanwhile.
const gather = 20 * time.Millisecond

func (w *writeBehind) run() {
	defer w.wg.Done()
	for {
		time.Sleep(gather)
		w.mu.Lock()
		if len(w.order) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		ops := make([]state.Op, 0, len(w.order))
		seqs := make([]uint64, 0, len(w.order))
		for _, id := range w.order {
			p := w.pending[id]
			p.queued = false
			ops = append(ops, state.Op{Key: id, Value: p.value})
			seqs = append(seqs, p.seq)
		}
		w.order = w.order[:0]
		w.mu.Unlock()

		w.write(ops)

		w.mu.Lock()
		for i, op := range ops {
			if p := w.pending[op.Key]; p != nil && p.seq == seqs[i] {
				delete(w.pending, op.Key) // landed, and nothing newer waits
			}
		}
		w.mu.Unlock()
	}
}

// close waits for the waiting writes to land; later ones are the
// caller's.
func (w *writeBehind) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}

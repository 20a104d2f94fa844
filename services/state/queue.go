package state

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"cursor2api/utils"
)

// Queue runs the writes of the gateway's bookkeeping with a short bound
// and keeps those that failed, within a bound, to retry them: a store
// that is lost for a while costs the writes of that while at most, and
// never holds a request. It also follows the store's health for /ready
// and /metrics. A Queue is safe for concurrent use.
type Queue struct {
	store   Store
	max     int
	timeout time.Duration
	logger  *slog.Logger

	mu       sync.Mutex
	pending  []write
	failed   uint64
	dropped  uint64
	degraded bool
	lastErr  string
}

type write struct {
	what string
	do   func(context.Context) error
}

// QueueStats are a Queue's counts and the store's health.
type QueueStats struct {
	Engine string `json:"engine"`
	// Status is "ok", or "degraded" while the store fails.
	Status string `json:"status"`
	// Queued are the failed writes waiting for a retry.
	Queued int `json:"queued"`
	// Failed counts the attempts that failed; Dropped the writes given
	// up because the queue was full.
	Failed    uint64 `json:"failed_writes"`
	Dropped   uint64 `json:"dropped_writes"`
	LastError string `json:"last_error,omitempty"`
}

// Defaults of a Queue.
const (
	DefaultQueueMax     = 1000
	DefaultWriteTimeout = 2 * time.Second
)

// NewQueue returns a queue of at most max failed writes (0:
// DefaultQueueMax) on store.
func NewQueue(store Store, max int, logger *slog.Logger) *Queue {
	if max <= 0 {
		max = DefaultQueueMax
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{store: store, max: max, timeout: DefaultWriteTimeout, logger: logger}
}

// Store is the queue's store.
func (q *Queue) Store() Store { return q.store }

// Write runs do now, bounded by a short timeout and detached from ctx's
// cancellation (a client that leaves does not undo the bookkeeping of
// what it was served). When do fails the write is queued for Run to
// retry, the oldest dropped past the bound, and the error returned.
func (q *Queue) Write(ctx context.Context, what string, do func(context.Context) error) error {
	err := q.try(ctx, do)
	if err == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) >= q.max {
		q.pending = q.pending[1:]
		q.dropped++
	}
	q.pending = append(q.pending, write{what: what, do: do})
	// One warning when the store is first seen failing (Retry logs its
	// recovery), not one per request while it is down.
	level := slog.LevelDebug
	if len(q.pending) == 1 {
		level = slog.LevelWarn
	}
	q.logger.Log(ctx, level, "state: write failed; queued for a retry", "engine", q.store.Engine(), "write", what, "queued", len(q.pending), "error", utils.Clip(err.Error(), 300))
	return err
}

// try runs do with the timeout and notes the outcome.
func (q *Queue) try(ctx context.Context, do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.timeout)
	defer cancel()
	err := do(ctx)
	q.note(err)
	return err
}

func (q *Queue) note(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err == nil {
		q.degraded, q.lastErr = false, ""
		return
	}
	q.failed++
	q.degraded, q.lastErr = true, utils.Clip(err.Error(), 300)
}

// Retry runs the queued writes once, in order, and stops at the first
// that fails again (the store is still lost). With nothing queued it
// pings the store, so that its health is known between writes.
func (q *Queue) Retry(ctx context.Context) {
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.mu.Unlock()
	if len(batch) == 0 {
		_ = q.try(ctx, q.store.Ping)
		return
	}
	for i, w := range batch {
		if ctx.Err() != nil || q.try(ctx, w.do) != nil {
			q.requeue(batch[i:])
			return
		}
	}
	q.logger.Info("state: queued writes done", "engine", q.store.Engine(), "writes", len(batch))
}

// requeue puts back the writes still to do ahead of those queued since,
// within the bound.
func (q *Queue) requeue(ws []write) {
	q.mu.Lock()
	defer q.mu.Unlock()
	all := append(ws[:len(ws):len(ws)], q.pending...)
	if over := len(all) - q.max; over > 0 {
		all = all[over:]
		q.dropped += uint64(over)
	}
	q.pending = all
}

// Run retries the queued writes (or pings the store) every interval
// until ctx ends.
func (q *Queue) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			q.Retry(ctx)
		}
	}
}

// Stats are the queue's counts and the store's health.
func (q *Queue) Stats() QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := QueueStats{Engine: q.store.Engine(), Status: "ok", Queued: len(q.pending), Failed: q.failed, Dropped: q.dropped, LastError: q.lastErr}
	if q.degraded {
		s.Status = "degraded"
	}
	return s
}

// Read runs a read of the store bounded by the write timeout, noting a
// failure in the store's health.
func (q *Queue) Read(ctx context.Context, do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	err := do(ctx)
	if err != nil && ctx.Err() == nil && err != ErrNotFound {
		q.note(err)
	}
	return err
}

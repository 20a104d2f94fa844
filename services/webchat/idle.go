package webchat

import (
	"sync"
	"sync/atomic"
	"time"
)

// idleTimer calls onIdle once the upstream has made no progress for its
// duration. Progress (touch) is one clock read and an atomic store: the
// runtime timer is re-armed only when it fires before the duration has
// passed since the last progress. Re-arming it on every frame, about 500
// times in a streamed answer, was a tenth of the gateway's CPU.
type idleTimer struct {
	base   time.Time // the monotonic origin of last
	last   atomic.Int64
	d      atomic.Int64
	onIdle func()

	mu      sync.Mutex // orders fire with stop and reset
	t       *time.Timer
	stopped bool
}

func newIdleTimer(d time.Duration, onIdle func()) *idleTimer {
	it := &idleTimer{base: time.Now(), onIdle: onIdle}
	it.d.Store(int64(d))
	it.mu.Lock()
	it.t = time.AfterFunc(d, it.fire)
	it.mu.Unlock()
	return it
}

// touch records progress.
func (it *idleTimer) touch() { it.last.Store(int64(time.Since(it.base))) }

// reset records progress and makes d the allowed silence from now on.
func (it *idleTimer) reset(d time.Duration) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.stopped {
		return
	}
	it.d.Store(int64(d))
	it.touch()
	it.t.Reset(d)
}

// stop ends the watch; onIdle is not called after it returns.
func (it *idleTimer) stop() {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.stopped = true
	it.t.Stop()
}

func (it *idleTimer) fire() {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.stopped {
		return
	}
	silent := time.Since(it.base) - time.Duration(it.last.Load())
	if left := time.Duration(it.d.Load()) - silent; left > 0 {
		it.t.Reset(left)
		return
	}
	it.stopped = true
	it.onIdle()
}

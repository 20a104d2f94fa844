package cursortest

import (
	"slices"
	"sync"
)

// Recorder keeps what a fake received, in order, for the test to read
// back; safe for concurrent use, and its zero value is ready. The fakes
// of every back door (this one, cloudtest, nativetest) keep their
// requests in one.
type Recorder[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add records v and returns its index (from 0).
func (r *Recorder[T]) Add(v T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	return len(r.items) - 1
}

// All returns what was recorded so far.
func (r *Recorder[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// Where returns what was recorded so far that keep accepts.
func (r *Recorder[T]) Where(keep func(T) bool) []T {
	var out []T
	for _, v := range r.All() {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

package socket

import (
	"context"
	"errors"
	"sync"
)

// ErrShuttingDown is what Accept returns, before any upgrade, once the
// connection's Group is shutting down.
var ErrShuttingDown = errors.New("the server is shutting down")

// ErrGoingAway is what Next returns once the Group is shutting down.
var ErrGoingAway = errors.New("going away")

// Group holds a server's open connections, which its HTTP server no
// longer sees once they are upgraded, so that a shutdown ends them well:
// a connection between turns closes at once (1001, going away: the client
// reconnects, to another replica), one in a turn after it. The drain's own
// bound still holds over that turn.
type Group struct {
	mu      sync.Mutex
	n       int
	stopped bool
	closing chan struct{}
	empty   chan struct{} // closed when stopped and n reaches 0
}

// NewGroup returns an empty group.
func NewGroup() *Group {
	return &Group{closing: make(chan struct{}), empty: make(chan struct{})}
}

func (g *Group) join() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.n++
	return true
}

func (g *Group) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 && g.stopped {
		close(g.empty)
	}
}

// Shutdown tells every connection to close after its turn, refuses new
// ones, and waits until they have closed or ctx ends.
func (g *Group) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if !g.stopped {
		g.stopped = true
		close(g.closing)
		if g.n == 0 {
			close(g.empty)
		}
	}
	g.mu.Unlock()
	select {
	case <-g.empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

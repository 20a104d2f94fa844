package console

import (
	"sync"
	"time"
)

// Failed sign-ins are bounded per client address, so that ADMIN_KEY
// cannot be guessed at speed: past MaxFailedSignIns in SignInWindow,
// every attempt from the address is refused until the window ends.
const (
	MaxFailedSignIns = 10
	SignInWindow     = time.Minute
	// maxSignInClients bounds the addresses kept.
	maxSignInClients = 10_000
)

// shared is the count of the addresses the table has no room for.
const shared = ""

// Attempts counts failed sign-ins with ADMIN_KEY per client address in
// fixed windows, in memory (per replica), for every door ADMIN_KEY opens
// (the console, the usage endpoint). When the table is full of windows
// still running, the addresses it has no room for share one count, so
// that many addresses gain no more guesses than one.
type Attempts struct {
	mu        sync.Mutex
	max       int
	window    time.Duration
	size      int
	clients   map[string]*failures
	lastPrune time.Time
}

type failures struct {
	start time.Time
	n     int
}

// NewAttempts returns the count of failed sign-ins: MaxFailedSignIns a
// SignInWindow per address.
func NewAttempts() *Attempts { return newAttempts(MaxFailedSignIns, SignInWindow, maxSignInClients) }

func newAttempts(max int, window time.Duration, size int) *Attempts {
	return &Attempts{max: max, window: window, size: size, clients: map[string]*failures{}}
}

// slot is the key addr's failures are counted under (a.mu held).
func (a *Attempts) slot(addr string, now time.Time) string {
	if _, ok := a.clients[addr]; ok || len(a.clients) < a.size {
		return addr
	}
	// Full: drop the windows that ended, at most once a second, so
	// that a flood of new addresses costs no scan each.
	if now.Sub(a.lastPrune) >= time.Second {
		a.lastPrune = now
		for k, f := range a.clients {
			if !now.Before(f.start.Add(a.window)) {
				delete(a.clients, k)
			}
		}
		if len(a.clients) < a.size {
			return addr
		}
	}
	return shared
}

// Wait is how long addr must wait before its next attempt; 0: it may try.
func (a *Attempts) Wait(addr string, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.clients[a.slot(addr, now)]
	if f == nil || f.n < a.max {
		return 0
	}
	return max(0, f.start.Add(a.window).Sub(now))
}

// Fail counts a failed attempt of addr; it reports whether that spent the
// address's last one.
func (a *Attempts) Fail(addr string, now time.Time) (spent bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := a.slot(addr, now)
	f := a.clients[k]
	if f == nil || !now.Before(f.start.Add(a.window)) {
		f = &failures{start: now}
		a.clients[k] = f
	}
	f.n++
	return f.n == a.max
}

// Succeed forgets addr's failures: an operator's typos do not add up.
func (a *Attempts) Succeed(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.clients, addr)
}

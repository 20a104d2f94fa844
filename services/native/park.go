package native

import (
	"errors"
	"sync"
	"time"

	"cursor2api/utils"
)

var (
	errExpired = errors.New("the turn waited for its tool results past CURSOR_PARK_TTL")
	errEvicted = errors.New("the turn was evicted by newer ones (CURSOR_PARK_MAX or CURSOR_PARK_BYTES)")
	errClosed  = errors.New("the gateway is shutting down")
)

// parking holds the runs left open at their tool calls, keyed by the
// calls' keys, bounded by count, memory and age. Whatever leaves it other
// than by take is aborted: its upstream run cancelled, its goroutines
// ended.
type parking struct {
	max      int
	ttl      time.Duration
	maxBytes int64

	mu     sync.Mutex
	byKey  map[string]*parked
	order  []*parked // oldest first
	closed bool
}

type parked struct {
	r     *run
	keys  []string
	timer *time.Timer
}

func newParking(max int, ttl time.Duration, maxBytes int64) *parking {
	return &parking{max: max, ttl: ttl, maxBytes: maxBytes, byKey: map[string]*parked{}}
}

// park keeps r until one of its calls' results comes back, or it is
// evicted or expires. It reports false (and keeps nothing) when parking
// is off or closed; the caller then aborts r itself.
func (p *parking) park(r *run, ids []string) bool {
	p.mu.Lock()
	if p.max == 0 || p.closed {
		p.mu.Unlock()
		return false
	}
	e := &parked{r: r}
	for _, id := range ids {
		k := utils.CallIDKey(id)
		e.keys = append(e.keys, k)
		p.byKey[k] = e
	}
	p.order = append(p.order, e)
	var evicted []*parked
	for len(p.order) > p.max || (len(p.order) > 1 && p.bytesLocked() > p.maxBytes) {
		old := p.order[0]
		p.removeLocked(old)
		evicted = append(evicted, old)
	}
	e.timer = time.AfterFunc(p.ttl, func() {
		if p.remove(e) {
			e.r.abort(errExpired)
		}
	})
	p.mu.Unlock()
	for _, old := range evicted {
		old.timer.Stop()
		old.r.abort(errEvicted)
	}
	return true
}

// take removes and returns the run one of ids belongs to, when tenant
// parked it (upstream.Request.Tenant). Another tenant's run is left
// parked for its own: a call id is no key, and results that name it from
// another client key are that client's own conversation, replayed.
func (p *parking) take(ids []string, tenant string) *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if e, ok := p.byKey[utils.CallIDKey(id)]; ok && e.r.tenant == tenant {
			p.removeLocked(e)
			e.timer.Stop()
			return e.r
		}
	}
	return nil
}

// remove drops e; false when it was gone already.
func (p *parking) remove(e *parked) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removeLocked(e)
}

func (p *parking) removeLocked(e *parked) bool {
	found := false
	for i, o := range p.order {
		if o == e {
			p.order = append(p.order[:i], p.order[i+1:]...)
			found = true
			break
		}
	}
	for _, k := range e.keys {
		if p.byKey[k] == e {
			delete(p.byKey, k)
		}
	}
	return found
}

func (p *parking) bytesLocked() int64 {
	var n int64
	for _, e := range p.order {
		n += e.r.blobs.bytes()
	}
	return n
}

// len is how many runs are parked.
func (p *parking) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.order)
}

// close aborts every parked run and parks no more.
func (p *parking) close() {
	p.mu.Lock()
	p.closed = true
	all := p.order
	p.order, p.byKey = nil, map[string]*parked{}
	p.mu.Unlock()
	for _, e := range all {
		e.timer.Stop()
		e.r.abort(errClosed)
	}
}

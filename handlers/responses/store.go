package responses

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"
)

// Stored is a kept response: the response object, and the conversation it
// ends (its input items, those of the responses before it, and its own
// output items), which previous_response_id continues.
type Stored struct {
	Response Response
	Items    []json.RawMessage
}

// size is what a kept response costs, about: its conversation and the
// request's tools it echoes. Items it shares with an earlier response are
// counted in both, so the store's total is never below the memory it holds.
func (st Stored) size() int64 {
	n := int64(512) // the fixed fields
	for _, it := range st.Items {
		n += int64(len(it))
	}
	for _, t := range st.Response.Tools {
		n += int64(len(t))
	}
	for _, it := range st.Response.Output {
		n += int64(len(it.Text) + len(it.Arguments))
	}
	if st.Response.Instructions != nil {
		n += int64(len(*st.Response.Instructions))
	}
	return n
}

// StoreLimits bound a Store.
type StoreLimits struct {
	// Max is the number of responses kept (0 keeps none).
	Max int
	// MaxBytes caps the total size of the kept responses (0: no cap).
	MaxBytes int64
	// TTL is how long a response is kept.
	TTL time.Duration
}

// Defaults of the store's limits, as config has them.
const (
	DefaultStoreMax      = 1000
	DefaultStoreMaxBytes = 256 << 20
	DefaultStoreTTL      = time.Hour
)

// DefaultStoreLimits are the limits config defaults to.
var DefaultStoreLimits = StoreLimits{Max: DefaultStoreMax, MaxBytes: DefaultStoreMaxBytes, TTL: DefaultStoreTTL}

// Store keeps the last responses in memory within its limits, so that
// previous_response_id can continue a conversation. It belongs to one
// process: replicas do not share it, and a restart empties it. A Store is
// safe for concurrent use.
type Store struct {
	limits StoreLimits
	now    func() time.Time

	mu      sync.Mutex
	order   *list.List // of *storeEntry, oldest first
	entries map[string]*list.Element
	bytes   int64 // the size of the kept responses
}

type storeEntry struct {
	id      string
	expires time.Time
	size    int64
	stored  Stored
}

// NewStore returns an empty store.
func NewStore(limits StoreLimits) *Store {
	return &Store{limits: limits, now: time.Now, order: list.New(), entries: map[string]*list.Element{}}
}

// SetClock replaces the store's clock, for tests of expiry.
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Put keeps a response, evicting the expired ones and then the oldest
// until the store is within its limits. A response larger than MaxBytes
// alone is not kept.
func (s *Store) Put(id string, st Stored) {
	size := st.size()
	if s.limits.Max <= 0 || (s.limits.MaxBytes > 0 && size > s.limits.MaxBytes) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if el, ok := s.entries[id]; ok {
		s.remove(el)
	}
	s.entries[id] = s.order.PushBack(&storeEntry{id: id, expires: now.Add(s.limits.TTL), size: size, stored: st})
	s.bytes += size
	// Entries expire in the order they were put, so the expired and the
	// oldest are all at the front.
	for el := s.order.Front(); el != nil; el = s.order.Front() {
		e := el.Value.(*storeEntry)
		within := s.order.Len() <= s.limits.Max && (s.limits.MaxBytes <= 0 || s.bytes <= s.limits.MaxBytes)
		if now.Before(e.expires) && within {
			break
		}
		s.remove(el)
	}
}

func (s *Store) remove(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.order.Remove(el)
	delete(s.entries, e.id)
	s.bytes -= e.size
}

// Get returns a kept response that has not expired.
func (s *Store) Get(id string) (Stored, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.entries[id]
	if !ok {
		return Stored{}, false
	}
	e := el.Value.(*storeEntry)
	if !s.now().Before(e.expires) {
		s.remove(el)
		return Stored{}, false
	}
	return e.stored, true
}

// Delete forgets a response; it reports whether one was kept (an
// expired one was not).
func (s *Store) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.entries[id]
	if !ok {
		return false
	}
	s.remove(el)
	return s.now().Before(el.Value.(*storeEntry).expires)
}

// Len is the number of responses kept, expired ones included until they
// are evicted.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// Bytes is the size of the responses kept, as the MaxBytes limit counts it.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

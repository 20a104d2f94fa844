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

// Store keeps the last responses in memory, at most max of them and each
// for at most ttl, so that previous_response_id can continue a
// conversation. It belongs to one process: replicas do not share it.
// A Store is safe for concurrent use.
type Store struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	order   *list.List // of *storeEntry, oldest first
	entries map[string]*list.Element
}

type storeEntry struct {
	id      string
	expires time.Time
	stored  Stored
}

// NewStore returns a store of at most max responses (0 keeps none), each
// kept for ttl.
func NewStore(max int, ttl time.Duration) *Store {
	return &Store{max: max, ttl: ttl, now: time.Now, order: list.New(), entries: map[string]*list.Element{}}
}

// SetClock replaces the store's clock, for tests of expiry.
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Put keeps a response, evicting the expired ones and then the oldest
// beyond the limit. Items share their bytes with the conversation they
// continue, so a long conversation costs its length once, not once per
// turn.
func (s *Store) Put(id string, st Stored) {
	if s.max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if el, ok := s.entries[id]; ok {
		s.order.Remove(el)
	}
	s.entries[id] = s.order.PushBack(&storeEntry{id: id, expires: now.Add(s.ttl), stored: st})
	// Entries expire in the order they were put, so the expired and the
	// oldest are all at the front.
	for el := s.order.Front(); el != nil; el = s.order.Front() {
		e := el.Value.(*storeEntry)
		if now.Before(e.expires) && s.order.Len() <= s.max {
			break
		}
		s.order.Remove(el)
		delete(s.entries, e.id)
	}
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
		s.order.Remove(el)
		delete(s.entries, id)
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
	s.order.Remove(el)
	delete(s.entries, id)
	return s.now().Before(el.Value.(*storeEntry).expires)
}

// Len is the number of responses kept, expired ones included until they
// are evicted.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

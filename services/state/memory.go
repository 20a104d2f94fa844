package state

import (
	"container/list"
	"context"
	"maps"
	"sync"
	"time"
)

// Memory is the engine of STATE_URL=memory:: the process's own memory,
// lost on restart and not shared between replicas.
type Memory struct {
	now func() time.Time

	mu sync.Mutex
	memState
}

// memState is the live state of the memory and file engines: tables of
// values in the order they were put, and counters. Its writes take the
// moment they happen as an argument, so that the file engine replays its
// log at the recorded moments and gets the same state. It is not safe
// for concurrent use: its engine holds a mutex around it.
type memState struct {
	tables   map[string]*memTable
	counters map[string]map[string]*memCounters // table, key
}

type memTable struct {
	order   *list.List // of *memEntry, in the order they were put
	entries map[string]*list.Element
	bytes   int64
}

type memEntry struct {
	key     string
	value   []byte
	expires time.Time
}

type memCounters struct {
	values  map[string]int64
	expires time.Time
}

func newMemState() memState {
	return memState{tables: map[string]*memTable{}, counters: map[string]map[string]*memCounters{}}
}

// NewMemory returns an empty memory store on the clock now (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, memState: newMemState()}
}

// Engine implements Store.
func (*Memory) Engine() string { return "memory" }

// Ping implements Store.
func (*Memory) Ping(ctx context.Context) error { return ctx.Err() }

// Close implements Store.
func (*Memory) Close() error { return nil }

// Put implements Store.
func (m *Memory) Put(ctx context.Context, table, key string, value []byte, lim Limits) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(m.now(), table, key, value, lim)
	return nil
}

// table is the table of that name, created when missing.
func (s *memState) table(name string) *memTable {
	t := s.tables[name]
	if t == nil {
		t = &memTable{order: list.New(), entries: map[string]*list.Element{}}
		s.tables[name] = t
	}
	return t
}

// put keeps a copy of value under key at now, then evicts the expired
// and the oldest values until the table is within lim.
func (s *memState) put(now time.Time, table, key string, value []byte, lim Limits) {
	t := s.table(table)
	t.set(key, value, expiry(now, lim.TTL))
	for el := t.order.Front(); el != nil; el = t.order.Front() {
		e := el.Value.(*memEntry)
		within := (lim.Max <= 0 || t.order.Len() <= lim.Max) && (lim.MaxBytes <= 0 || t.bytes <= lim.MaxBytes)
		if now.Before(e.expires) && within {
			break
		}
		t.remove(el)
	}
}

// set keeps a copy of value under key until expires, as the newest value
// of the table, and evicts nothing.
func (t *memTable) set(key string, value []byte, expires time.Time) {
	if el, ok := t.entries[key]; ok {
		t.remove(el)
	}
	v := append([]byte(nil), value...)
	t.entries[key] = t.order.PushBack(&memEntry{key: key, value: v, expires: expires})
	t.bytes += int64(len(v))
}

func (t *memTable) remove(el *list.Element) {
	e := el.Value.(*memEntry)
	t.order.Remove(el)
	delete(t.entries, e.key)
	t.bytes -= int64(len(e.value))
}

// Len is the number of values of table kept, the expired ones included
// until they are evicted.
func (m *Memory) Len(table string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.len(table)
}

func (s *memState) len(table string) int {
	if t := s.tables[table]; t != nil {
		return t.order.Len()
	}
	return 0
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, table, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.get(m.now(), table, key, true)
}

// get returns a copy of the value of key at now. An expired value is
// dropped when drop is set; the file engine keeps it (as its log does,
// which records no reads) until a write evicts it.
func (s *memState) get(now time.Time, table, key string, drop bool) ([]byte, error) {
	t := s.tables[table]
	if t == nil {
		return nil, ErrNotFound
	}
	el, ok := t.entries[key]
	if !ok {
		return nil, ErrNotFound
	}
	e := el.Value.(*memEntry)
	if !now.Before(e.expires) {
		if drop {
			t.remove(el)
		}
		return nil, ErrNotFound
	}
	return append([]byte(nil), e.value...), nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, table, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.del(m.now(), table, key), nil
}

// del forgets key and reports whether it was kept (unexpired) at now.
func (s *memState) del(now time.Time, table, key string) bool {
	t := s.tables[table]
	if t == nil {
		return false
	}
	el, ok := t.entries[key]
	if !ok {
		return false
	}
	t.remove(el)
	return now.Before(el.Value.(*memEntry).expires)
}

// Add implements Store.
func (m *Memory) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(m.now(), table, key, add, ttl)
	return nil
}

// add adds to the counters of key at now; they expire ttl later.
func (s *memState) add(now time.Time, table, key string, add map[string]int64, ttl time.Duration) {
	byKey := s.counters[table]
	if byKey == nil {
		byKey = map[string]*memCounters{}
		s.counters[table] = byKey
	}
	// Expired counters go as new ones come: the ledger adds a key an
	// hour, so this stays cheap.
	for k, c := range byKey {
		if !now.Before(c.expires) {
			delete(byKey, k)
		}
	}
	c := byKey[key]
	if c == nil {
		c = &memCounters{values: map[string]int64{}}
		byKey[key] = c
	}
	for f, n := range add {
		c.values[f] += n
	}
	c.expires = expiry(now, ttl)
}

// setCounters sets the counters of key, expiring at expires, as they
// were (a snapshot's record).
func (s *memState) setCounters(table, key string, values map[string]int64, expires time.Time) {
	byKey := s.counters[table]
	if byKey == nil {
		byKey = map[string]*memCounters{}
		s.counters[table] = byKey
	}
	byKey[key] = &memCounters{values: values, expires: expires}
}

// Counters implements Store.
func (m *Memory) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counterValues(m.now(), table, key), nil
}

// counterValues is a copy of the counters of key at now.
func (s *memState) counterValues(now time.Time, table, key string) map[string]int64 {
	c := s.counters[table][key]
	if c == nil || !now.Before(c.expires) {
		return map[string]int64{}
	}
	return maps.Clone(c.values)
}

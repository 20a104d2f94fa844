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

	mu       sync.Mutex
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

// NewMemory returns an empty memory store on the clock now (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, tables: map[string]*memTable{}, counters: map[string]map[string]*memCounters{}}
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
	t := m.tables[table]
	if t == nil {
		t = &memTable{order: list.New(), entries: map[string]*list.Element{}}
		m.tables[table] = t
	}
	now := m.now()
	if el, ok := t.entries[key]; ok {
		t.remove(el)
	}
	v := append([]byte(nil), value...)
	t.entries[key] = t.order.PushBack(&memEntry{key: key, value: v, expires: expiry(now, lim.TTL)})
	t.bytes += int64(len(v))
	for el := t.order.Front(); el != nil; el = t.order.Front() {
		e := el.Value.(*memEntry)
		within := (lim.Max <= 0 || t.order.Len() <= lim.Max) && (lim.MaxBytes <= 0 || t.bytes <= lim.MaxBytes)
		if now.Before(e.expires) && within {
			break
		}
		t.remove(el)
	}
	return nil
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
	if t := m.tables[table]; t != nil {
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
	t := m.tables[table]
	if t == nil {
		return nil, ErrNotFound
	}
	el, ok := t.entries[key]
	if !ok {
		return nil, ErrNotFound
	}
	e := el.Value.(*memEntry)
	if !m.now().Before(e.expires) {
		t.remove(el)
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
	t := m.tables[table]
	if t == nil {
		return false, nil
	}
	el, ok := t.entries[key]
	if !ok {
		return false, nil
	}
	t.remove(el)
	return m.now().Before(el.Value.(*memEntry).expires), nil
}

// Add implements Store.
func (m *Memory) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	byKey := m.counters[table]
	if byKey == nil {
		byKey = map[string]*memCounters{}
		m.counters[table] = byKey
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
	return nil
}

// Counters implements Store.
func (m *Memory) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counters[table][key]
	if c == nil || !m.now().Before(c.expires) {
		return map[string]int64{}, nil
	}
	return maps.Clone(c.values), nil
}

package clientkeys

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The limits' names, as the 429's message and the metrics say them.
const (
	LimitRPM          = "rpm"
	LimitTokensPerDay = "tokens_per_day"
	LimitConcurrent   = "concurrent"
)

// Use is what a key uses now against its limits.
type Use struct {
	// RPM is the requests of the current minute (a fixed window, on the
	// minute of the clock).
	RPM int64 `json:"rpm"`
	// TokensToday is the input plus output tokens of the UTC day.
	TokensToday int64 `json:"tokens_today"`
	// Concurrent is the requests in flight (a stream until its last byte).
	Concurrent int64 `json:"concurrent"`
}

// Refusal is a request over a limit.
type Refusal struct {
	Key        string // the key's name, or its fingerprint when unnamed
	Limit      string // LimitRPM, LimitTokensPerDay or LimitConcurrent
	Max        int64
	RetryAfter time.Duration
}

func (r *Refusal) Error() string {
	switch r.Limit {
	case LimitRPM:
		return fmt.Sprintf("key %q is over its limit of %d requests per minute (rpm); retry after %s", r.Key, r.Max, r.RetryAfter)
	case LimitTokensPerDay:
		return fmt.Sprintf("key %q has used its %d tokens for today (tokens_per_day, UTC); retry after %s", r.Key, r.Max, r.RetryAfter)
	default:
		return fmt.Sprintf("key %q already has %d requests in flight (its concurrent limit); retry when one ends", r.Key, r.Max)
	}
}

// Counter keeps the limits' counts: in one process (Memory) or shared by
// replicas (a store). Admit checks every limit of a key and, when none is
// reached, counts the request and takes a concurrency slot, at once.
type Counter interface {
	// Admit returns a nil Refusal and a release for the slot (called
	// once, when the request ends), or the limit the request is over.
	Admit(ctx context.Context, fingerprint string, l Limits, now time.Time) (release func(), refused *Refusal, err error)
	// AddTokens counts an answer's tokens in the day of now.
	AddTokens(ctx context.Context, fingerprint string, n int64, now time.Time) error
	// Use reports a key's use now.
	Use(ctx context.Context, fingerprint string, now time.Time) (Use, error)
}

// window is the start of now's minute, and day its UTC day.
func window(now time.Time) int64 { return now.Unix() / 60 }
func day(now time.Time) int64    { return now.Unix() / 86400 }

// untilNextMinute and untilTomorrow are the Retry-After of the rpm and
// tokens_per_day limits: when the fixed window or the day turns.
func untilNextMinute(now time.Time) time.Duration {
	return time.Unix((window(now)+1)*60, 0).Sub(now).Round(time.Second)
}
func untilTomorrow(now time.Time) time.Duration {
	return time.Unix((day(now)+1)*86400, 0).Sub(now).Round(time.Second)
}

// Memory counts in one process. Its map holds only the keys that were
// admitted, so it is bounded by the keys file.
type Memory struct {
	mu   sync.Mutex
	keys map[string]*memUse
}

type memUse struct {
	window, count int64 // the current minute and its requests
	day, tokens   int64 // the current UTC day and its tokens
	active        int64
}

// NewMemory returns counts in this process only.
func NewMemory() *Memory { return &Memory{keys: map[string]*memUse{}} }

func (m *Memory) use(fp string, now time.Time) *memUse {
	u := m.keys[fp]
	if u == nil {
		u = &memUse{}
		m.keys[fp] = u
	}
	if w := window(now); u.window != w {
		u.window, u.count = w, 0
	}
	if d := day(now); u.day != d {
		u.day, u.tokens = d, 0
	}
	return u
}

// Admit implements Counter.
func (m *Memory) Admit(_ context.Context, fp string, l Limits, now time.Time) (func(), *Refusal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.use(fp, now)
	switch {
	case l.TokensPerDay > 0 && u.tokens >= l.TokensPerDay:
		return nil, &Refusal{Limit: LimitTokensPerDay, Max: l.TokensPerDay, RetryAfter: untilTomorrow(now)}, nil
	case l.Concurrent > 0 && u.active >= l.Concurrent:
		return nil, &Refusal{Limit: LimitConcurrent, Max: l.Concurrent, RetryAfter: time.Second}, nil
	case l.RPM > 0 && u.count >= l.RPM:
		return nil, &Refusal{Limit: LimitRPM, Max: l.RPM, RetryAfter: untilNextMinute(now)}, nil
	}
	u.count++
	u.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			u.active--
			m.mu.Unlock()
		})
	}, nil, nil
}

// AddTokens implements Counter.
func (m *Memory) AddTokens(_ context.Context, fp string, n int64, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.use(fp, now).tokens += n
	return nil
}

// Use implements Counter.
func (m *Memory) Use(_ context.Context, fp string, now time.Time) (Use, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[fp] == nil {
		return Use{}, nil
	}
	u := m.use(fp, now)
	return Use{RPM: u.count, TokensToday: u.tokens, Concurrent: u.active}, nil
}

// KeyUse is a key with its limits and its use now, for the console.
type KeyUse struct {
	Key
	Use Use `json:"use"`
}

// List is every key in force with its use now (zero where the counter
// fails: the console shows the keys even when the store is down).
func List(ctx context.Context, s *Set, c Counter, now time.Time) []KeyUse {
	keys := s.Table().Keys()
	out := make([]KeyUse, len(keys))
	for i, k := range keys {
		out[i].Key = k
		if c != nil {
			out[i].Use, _ = c.Use(ctx, k.Fingerprint, now)
		}
	}
	return out
}

// Package state keeps what the gateway remembers across requests, restarts
// and replicas (kept responses, the usage ledger, key rests) behind one
// interface, Store. STATE_URL chooses the engine: memory with a log under
// STATE_DIR (File, the default), Redis or Valkey (redis://, rediss://), or
// memory alone (memory:). Like Redis, the whole live state is in memory,
// bounded by what its users keep (RESPONSES_STORE_MAX, _BYTES, retention).
//
// A table holds values by key, which expire and are evicted oldest first
// within its Limits, and counters, which add up across writers and expire
// a while after their last addition.
package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotFound is the error of Get for a key that is not kept (never was,
// expired, evicted or deleted).
var ErrNotFound = errors.New("state: not found")

// Limits bound a table of values. Entries are evicted oldest first (the
// one that expires soonest) when a Put would exceed them.
type Limits struct {
	// TTL is how long a value is kept after its Put; it must be positive.
	TTL time.Duration
	// Max is the number of values kept (0: no cap).
	Max int
	// MaxBytes caps the total size of the values kept (0: no cap).
	MaxBytes int64
}

// Store is the state of the gateway. Every method is safe for concurrent
// use and returns the context's error when it ends first.
type Store interface {
	// Put keeps value under key in table for lim.TTL, replacing what
	// the key held, then evicts expired entries and the oldest until the
	// table is within lim.
	Put(ctx context.Context, table, key string, value []byte, lim Limits) error
	// Get returns the value of key in table, or ErrNotFound.
	Get(ctx context.Context, table, key string) ([]byte, error)
	// Delete forgets key in table and reports whether it was kept.
	Delete(ctx context.Context, table, key string) (bool, error)
	// Add adds to the named counters of key in table, creating them at
	// zero; they expire ttl after the last Add.
	Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error
	// Counters returns the counters of key in table (empty when none).
	Counters(ctx context.Context, table, key string) (map[string]int64, error)
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	// Engine names the engine: "memory", "file" or "redis".
	Engine() string
	// Close releases the store; it must not be used afterwards.
	Close() error
}

// CountersOf returns the counters of each of keys in table, in their
// order: in one round trip on Redis (a pipeline), else by one Counters
// call per key. A store that wraps another reads key by key.
func CountersOf(ctx context.Context, s Store, table string, keys []string) ([]map[string]int64, error) {
	if r, ok := s.(*Redis); ok {
		return r.countersOf(ctx, table, keys)
	}
	out := make([]map[string]int64, len(keys))
	for i, k := range keys {
		var err error
		if out[i], err = s.Counters(ctx, table, k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Options open a Store.
type Options struct {
	// URL is STATE_URL: "" (a file under Dir), "memory:", or a redis://
	// or rediss:// URL.
	URL string
	// Dir is STATE_DIR, the directory of the embedded file ("": the
	// default, DefaultDir).
	Dir string
	// ConnectTimeout bounds the wait for a Redis server at start
	// (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Logger reports the wait for a Redis server and the file's repairs
	// and migration; nil: discarded.
	Logger *slog.Logger
	// Sync is STATE_SYNC, when the file engine syncs its log to disk:
	// SyncSecond ("" too) or SyncAlways. Memory and Redis ignore it.
	Sync string
	// Now is the clock of the memory and file engines (tests set it);
	// nil means time.Now. Redis keeps time by itself.
	Now func() time.Time
}

// DefaultConnectTimeout bounds the wait for a Redis server at start.
const DefaultConnectTimeout = 30 * time.Second

// FileName is the file engine's log in STATE_DIR.
const FileName = "cursor2api.log"

// DefaultDir is the user's state directory for the gateway:
// $XDG_STATE_HOME/cursor2api, else ~/.local/state/cursor2api.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "cursor2api"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("STATE_DIR is not set and there is no home directory to default to (%w): set STATE_DIR to a writable directory, or STATE_URL=memory: to keep no state", err)
	}
	return filepath.Join(home, ".local", "state", "cursor2api"), nil
}

// Open opens the store opts.URL names. For Redis it waits for the server
// at most ConnectTimeout; for the file it checks that the directory is
// there and writable. Its errors name the setting to fix.
func Open(ctx context.Context, opts Options) (Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch u := strings.TrimSpace(opts.URL); {
	case u == "":
		f, err := openFile(fileOptions{dir: opts.Dir, now: now, logger: logger, sync: opts.Sync})
		if err != nil {
			return nil, err
		}
		return f, nil
	case u == "memory:" || u == "memory":
		return NewMemory(now), nil
	case strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "rediss://"):
		timeout := opts.ConnectTimeout
		if timeout <= 0 {
			timeout = DefaultConnectTimeout
		}
		r, err := openRedis(ctx, u, timeout, logger)
		if err != nil {
			return nil, err
		}
		return r, nil
	default:
		return nil, fmt.Errorf("STATE_URL=%q: use nothing (a file under STATE_DIR), memory: (no persistence) or a redis:// or rediss:// URL", Redact(u))
	}
}

// Redact is a STATE_URL fit for logs and errors: its password replaced.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Do not echo what may hold a password.
		if i := strings.Index(raw, "://"); i >= 0 {
			return raw[:i+3] + "…"
		}
		if len(raw) > 16 {
			return raw[:16] + "…"
		}
		return raw
	}
	return u.Redacted()
}

// expiry is the moment a value put now with ttl expires.
func expiry(now time.Time, ttl time.Duration) time.Time { return now.Add(ttl) }

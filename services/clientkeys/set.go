package clientkeys

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPoll is how often Watch looks at the keys file.
const DefaultPoll = 3 * time.Second

// maxFileBytes bounds the keys file.
const maxFileBytes = 4 << 20

// Set is the keys in force: the file's and API_KEY's, swapped whole on a
// reload. A bad file on reload keeps the keys before it; Err says why.
type Set struct {
	file  string
	plain []string
	cur   atomic.Pointer[Table]

	mu       sync.Mutex
	lastErr  error
	loadedAt time.Time
	stamp    fileStamp
}

// fileStamp is what Watch compares to see a change.
type fileStamp struct {
	mod  time.Time
	size int64
}

// Load reads file (empty: none) and plain (API_KEY). A bad file is an
// error naming its line: the gateway does not start on it.
func Load(file string, plain []string) (*Set, error) {
	s := &Set{file: file, plain: plain}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the file again. On an error the keys stay as they were.
func (s *Set) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, stamp, err := s.read()
	s.stamp = stamp
	if err != nil {
		s.lastErr = err
		return err
	}
	s.cur.Store(t)
	s.lastErr, s.loadedAt = nil, time.Now()
	return nil
}

func (s *Set) read() (*Table, fileStamp, error) {
	if s.file == "" {
		t, err := Parse("", nil, s.plain)
		return t, fileStamp{}, err
	}
	f, err := os.Open(s.file)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("API_KEYS_FILE: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("API_KEYS_FILE: %w", err)
	}
	stamp := fileStamp{st.ModTime(), st.Size()}
	if st.Size() > maxFileBytes {
		return nil, stamp, fmt.Errorf("API_KEYS_FILE %s is %d bytes, over the bound of %d", s.file, st.Size(), maxFileBytes)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, stamp, fmt.Errorf("API_KEYS_FILE %s: %w", s.file, err)
	}
	t, err := Parse(s.file, data, s.plain)
	return t, stamp, err
}

// Table is the keys in force.
func (s *Set) Table() *Table { return s.cur.Load() }

// Match finds the key given among the keys in force.
func (s *Set) Match(given string) (Key, bool) { return s.cur.Load().Match(given) }

// NameOf is the name of the key of fingerprint in force ("" if none).
func (s *Set) NameOf(fingerprint string) string { return s.cur.Load().NameOf(fingerprint) }

// Empty reports whether no key is configured: the gateway is open.
func (s *Set) Empty() bool { return s.cur.Load().Len() == 0 }

// Status is the state of the keys file, for the console.
type Status struct {
	File     string
	LoadedAt time.Time
	// Err is why the last reload failed ("" when it did not); the keys
	// in force are then those of LoadedAt.
	Err string
}

// Status reports the file's last load.
func (s *Set) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{File: s.file, LoadedAt: s.loadedAt}
	if s.lastErr != nil {
		st.Err = s.lastErr.Error()
	}
	return st
}

// Watch rereads the file when its modification time or size changes,
// looking every poll, and when reload receives (SIGHUP), until ctx ends.
func (s *Set) Watch(ctx context.Context, poll time.Duration, reload <-chan os.Signal, logger *slog.Logger) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			s.reloadLogged(logger, "signal")
		case <-tick.C:
			if s.file == "" {
				continue
			}
			st, err := os.Stat(s.file)
			s.mu.Lock()
			changed := err != nil && s.lastErr == nil || err == nil && (fileStamp{st.ModTime(), st.Size()}) != s.stamp
			s.mu.Unlock()
			if changed {
				s.reloadLogged(logger, "change")
			}
		}
	}
}

func (s *Set) reloadLogged(logger *slog.Logger, why string) {
	if err := s.Reload(); err != nil {
		logger.Error("client keys: the keys file was not reloaded; the keys before it stay in force", "file", s.file, "reason", why, "error", err)
		return
	}
	logger.Info("client keys: reloaded", "file", s.file, "reason", why, "keys", s.Table().Len())
}

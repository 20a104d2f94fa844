package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services"
	"cursor2api/services/cursortest"
	"cursor2api/services/native"
	"cursor2api/services/native/keys"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/state"
	"cursor2api/services/usage"
)

// restStore is a store in memory whose writes of key rests wait for the
// test: each says it began on entered, then waits for release (hang: it
// does not even heed its context, as a store whose connection is stuck).
// It records the completed rest writes and its Close, in order.
type restStore struct {
	state.Store
	hang    bool
	entered chan struct{}
	release chan struct{}

	mu     sync.Mutex
	events []string
}

func (s *restStore) Put(ctx context.Context, table, key string, value []byte, lim state.Limits) error {
	if table != keys.RestsTable {
		return s.Store.Put(ctx, table, key, value, lim)
	}
	select {
	case s.entered <- struct{}{}:
	default:
	}
	if s.hang {
		<-s.release
		return context.DeadlineExceeded
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := s.Store.Put(ctx, table, key, value, lim); err != nil {
		return err
	}
	s.note("put " + key + " " + string(value))
	return nil
}

func (s *restStore) Close() error {
	s.note("close")
	return s.Store.Close()
}

func (s *restStore) note(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *restStore) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

// shutdownServer is a Server on the native back door whose key pool
// shares its rests through store, and a key of it that has just begun a
// rest: its write to the store is under way, held by the store.
func shutdownServer(t *testing.T, store *restStore) (*Server, *cursortest.LogBuffer) {
	t.Helper()
	fake := nativetest.NewServer(t, nativetest.Options{})
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q := state.NewQueue(store, 0, logger)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	pool, err := keys.New(keys.Options{Keys: []string{nativetest.DefaultAPIKey}, BaseURL: fake.URL, HTTP: hc, State: q, Logger: logger})
	require.NoError(t, err)
	client := native.New(native.Options{Keys: pool, ConnectURL: fake.URL, RESTURL: fake.URL, HTTP: hc, Logger: logger})
	s := &Server{logger: logger, gw: &services.Gateway{Native: client}, state: q, ledger: usage.New(q, time.Hour, logger), endDrain: func() {}}

	lease, err := pool.Acquire(t.Context(), "a conversation")
	require.NoError(t, err)
	lease.Done(keys.Outcome{Kind: keys.Quota})
	select {
	case <-store.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the rest was not written")
	}
	return s, logs
}

// TestShutdownWaitsForKeyRests: a key rest recorded just before a stop is
// in the store when the gateway has closed it. Close waits for the write
// under way, and closes the store after it.
func TestShutdownWaitsForKeyRests(t *testing.T) {
	store := &restStore{Store: state.NewMemory(nil), entered: make(chan struct{}, 1), release: make(chan struct{})}
	s, _ := shutdownServer(t, store)

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a key rest was being written")
	case <-time.After(100 * time.Millisecond):
	}
	close(store.release)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(2 * state.DefaultWriteTimeout):
		t.Fatal("Close did not return once the write was done")
	}
	events := store.log()
	require.Len(t, events, 2, "%q", events)
	assert.True(t, strings.HasPrefix(events[0], "put "+keys.Fingerprint(nativetest.DefaultAPIKey)+" "), "the rest was written: %q", events)
	assert.Contains(t, events[0], `"kind":"quota"`)
	assert.Equal(t, "close", events[1], "and the store closed after it")
}

// TestShutdownBoundedByAHungStore: a store that hangs holds the shutdown
// for the write's bound at most; the rest is given up, and said so.
func TestShutdownBoundedByAHungStore(t *testing.T) {
	store := &restStore{Store: state.NewMemory(nil), hang: true, entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(store.release) })
	s, logs := shutdownServer(t, store)

	began := time.Now()
	require.NoError(t, s.Close())
	took := time.Since(began)
	assert.GreaterOrEqual(t, took, state.DefaultWriteTimeout/2, "Close waited for the write a while")
	assert.Less(t, took, 2*state.DefaultWriteTimeout+time.Second, "and no longer than its bound")
	assert.Equal(t, []string{"close"}, store.log(), "the store is closed all the same")
	assert.Contains(t, logs.String(), "a key rest was not written at shutdown")
}

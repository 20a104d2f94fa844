package server

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services"
	"cursor2api/services/cursortest"
	"cursor2api/services/native/agentv1"
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

// shutdownServer is a Server on the native back door, wired from its
// configuration as New wires it, whose key pool shares its rests through
// store, and a key of it that has just begun a rest (Cursor answered its
// chat with a quota): its write to the store is under way, held by the
// store.
func shutdownServer(t *testing.T, store *restStore) (*Server, *cursortest.LogBuffer) {
	t.Helper()
	fake := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(nativetest.ErrQuota())}}
	}})
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	q := state.NewQueue(store, 0, logger)
	cfg, err := config.FromMap(map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": fake.URL,
		"CURSOR_API_URL": "http://127.0.0.1:9/never",
	})
	require.NoError(t, err)
	gw, err := services.FromConfigState(cfg, logger, q)
	require.NoError(t, err)
	s := &Server{logger: logger, gw: gw, state: q, ledger: usage.New(q, time.Hour, logger), endDrain: func() {}}

	p, err := gw.Chat.Prepare(&models.Request{Model: "composer-2", Messages: []models.Message{
		{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "a conversation"}}},
	}}, "shutdown")
	require.NoError(t, err)
	_, err = gw.Chat.Complete(t.Context(), p)
	var quota *models.Error
	require.ErrorAs(t, err, &quota)
	require.Equal(t, models.KindRateLimit, quota.Kind, "%v", err)
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

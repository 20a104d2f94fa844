package keys

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state"
)

// gatedStore holds every write until the test releases it (or the
// write's context ends), and says when one begins.
type gatedStore struct {
	state.Store
	entered chan struct{}
	release chan struct{}
}

func (s *gatedStore) Put(ctx context.Context, table, key string, value []byte, lim state.Limits) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.Put(ctx, table, key, value, lim)
}

// Wait returns at once when nothing is being written, waits for a rest's
// write under way, and gives up when its context ends first.
func TestWaitForRestWrites(t *testing.T) {
	c := newClock()
	f := newFakeAuth(t, c)

	alone, _ := newPool(t, f, []string{keyA}, nil)
	require.NoError(t, alone.Wait(bounded(t)), "a pool without a store has nothing to wait for")

	store := &gatedStore{Store: state.NewMemory(c.Now), entered: make(chan struct{}, 1), release: make(chan struct{})}
	p, _, _ := sharedPool(t, f, []string{keyA}, store)
	require.NoError(t, p.Wait(bounded(t)), "nothing written yet")
	l := acquire(t, p, "s")
	l.Done(Outcome{Kind: Quota})
	wait(t, store.entered)

	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := p.Wait(short)
	require.Error(t, err, "the write is held")
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	done := make(chan error, 1)
	go func() { done <- p.Wait(bounded(t)) }()
	close(store.release)
	require.NoError(t, wait(t, done))
	b, err := store.Get(t.Context(), RestsTable, Fingerprint(keyA))
	require.NoError(t, err, "the rest is in the store when Wait returns")
	assert.Contains(t, string(b), `"kind":"quota"`)
}

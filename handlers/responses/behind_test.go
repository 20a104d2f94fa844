package responses

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/services/state"
)

// openFileStore opens a Store on the embedded file engine in dir; close
// closes the Store and then the engine, as the server does.
func openFileStore(t *testing.T, dir string, limits StoreLimits) (s *Store, close func()) {
	t.Helper()
	engine, err := state.Open(context.Background(), state.Options{Dir: dir})
	require.NoError(t, err)
	s = NewStore(state.NewQueue(engine, 0, nil), limits)
	require.NotNil(t, s.behind, "the file engine writes behind")
	return s, func() {
		s.Close()
		require.NoError(t, engine.Close())
	}
}

// TestStoreWritesBehindOnTheFile checks the Responses store on the
// embedded file: what Put and Delete did is what Get sees at once, while
// the writes land behind; Close waits for them, so that a store opened
// again on the file finds exactly that; and no goroutine outlives Close.
func TestStoreWritesBehindOnTheFile(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cases := []struct {
		name string
		max  int // RESPONSES_STORE_MAX (0: 1000)
		// run works on the store; want is, by id, whether it is kept.
		run  func(t *testing.T, s *Store)
		want map[string]bool
	}{
		{"put, read at once", 0, func(t *testing.T, s *Store) {
			put(t, s, "r1", stored("r1"))
			got, ok, err := s.Get(context.Background(), "r1")
			require.NoError(t, err)
			require.True(t, ok, "a response is read back before its write has landed")
			assert.Equal(t, "r1", idOf(t, got))
		}, map[string]bool{"r1": true}},
		{"put then delete", 0, func(t *testing.T, s *Store) {
			put(t, s, "r1", stored("r1"))
			kept, err := s.Delete(context.Background(), "r1")
			require.NoError(t, err)
			assert.True(t, kept)
			assert.False(t, has(t, s, "r1"), "deleted")
			kept, err = s.Delete(context.Background(), "r1")
			require.NoError(t, err)
			assert.False(t, kept, "a second delete finds nothing")
		}, map[string]bool{"r1": false}},
		{"delete of a landed response", 0, func(t *testing.T, s *Store) {
			put(t, s, "r1", stored("r1"))
			s.Close() // it has landed
			kept, err := s.Delete(context.Background(), "r1")
			require.NoError(t, err)
			assert.True(t, kept)
		}, map[string]bool{"r1": false}},
		{"many at once", 0, func(t *testing.T, s *Store) {
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Go(func() {
					id := fmt.Sprintf("r%d", i)
					assert.NoError(t, s.Put(context.Background(), id, stored(id)))
					_, ok, err := s.Get(context.Background(), id)
					assert.NoError(t, err)
					assert.True(t, ok, id)
				})
			}
			wg.Wait()
		}, func() map[string]bool {
			m := map[string]bool{}
			for i := range 200 {
				m[fmt.Sprintf("r%d", i)] = true
			}
			return m
		}()},
		{"the newest is kept, in order", 3, func(t *testing.T, s *Store) {
			for i := range 5 {
				id := fmt.Sprintf("r%d", i)
				put(t, s, id, stored(id))
			}
		}, map[string]bool{"r0": false, "r1": false, "r2": true, "r3": true, "r4": true}},
		{"put after close writes at once", 0, func(t *testing.T, s *Store) {
			s.Close()
			put(t, s, "late", stored("late"))
			_, waiting := s.behind.get("late")
			assert.False(t, waiting, "written, not waiting")
		}, map[string]bool{"late": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limits := StoreLimits{Max: 1000, TTL: DefaultStoreTTL}
			if tc.max > 0 {
				limits.Max = tc.max
			}
			dir := t.TempDir()
			s, closeStore := openFileStore(t, dir, limits)
			tc.run(t, s)
			closeStore()

			again, closeAgain := openFileStore(t, dir, limits)
			defer closeAgain()
			for id, want := range tc.want {
				assert.Equal(t, want, has(t, again, id), "%s after reopening the file", id)
			}
		})
	}
}

// TestWriteBehindBounds checks that past maxBehind waiting writes a Put
// is not queued (the caller writes it at once), and that a newer write to
// an id waiting already replaces it rather than queueing twice.
func TestWriteBehindBounds(t *testing.T) {
	block := make(chan struct{})
	var mu sync.Mutex
	var written []string
	w := newWriteBehind(func(ops []state.Op) {
		<-block
		mu.Lock()
		for _, op := range ops {
			written = append(written, fmt.Sprintf("%s=%s", op.Key, op.Value))
		}
		mu.Unlock()
	})
	for i := range maxBehind {
		require.True(t, w.add(fmt.Sprint(i), []byte("v")))
	}
	assert.False(t, w.add("one more", []byte("v")), "past maxBehind the caller writes")
	assert.True(t, w.add("7", []byte("newer")), "an id waiting already may be written again")
	v, ok := w.get("7")
	assert.True(t, ok)
	assert.Equal(t, "newer", string(v))
	close(block)
	w.close()
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, written, "7=newer", "the newest write to an id lands")
	_, ok = w.get("7")
	assert.False(t, ok, "nothing waits after close")
}

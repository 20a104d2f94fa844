package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/state/redistest"
)

// clock is a settable time for the memory and file engines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// engine is a store under test, a second handle on the same state (a
// replica, or the file reopened is tested apart), and how to let time
// pass for it.
type engine struct {
	name  string
	open  func(t *testing.T) (Store, func() Store)
	sleep func(d time.Duration)
}

func engines(t *testing.T) []engine {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	return []engine{
		{name: "memory", sleep: c.add, open: func(t *testing.T) (Store, func() Store) {
			m := NewMemory(c.now)
			return m, func() Store { return m }
		}},
		{name: "file", sleep: c.add, open: func(t *testing.T) (Store, func() Store) {
			s, err := Open(t.Context(), Options{Dir: t.TempDir(), Now: c.now})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s, func() Store { return s }
		}},
		{name: "redis", sleep: time.Sleep, open: func(t *testing.T) (Store, func() Store) {
			srv := redistest.Start(t)
			open := func() Store {
				s, err := Open(t.Context(), Options{URL: srv.URL(), ConnectTimeout: 5 * time.Second})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			return open(), open
		}},
	}
}

func eachEngine(t *testing.T, test func(t *testing.T, e engine, s Store, replica func() Store)) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			s, replica := e.open(t)
			assert.Equal(t, e.name, s.Engine())
			require.NoError(t, s.Ping(t.Context()))
			test(t, e, s, replica)
		})
	}
}

var hour = Limits{TTL: time.Hour}

func TestPutGetDelete(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx := t.Context()
		_, err := s.Get(ctx, "responses", "a")
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.Put(ctx, "responses", "a", []byte("one"), hour))
		require.NoError(t, s.Put(ctx, "other", "a", []byte("elsewhere"), hour))
		other := replica()
		got, err := other.Get(ctx, "responses", "a")
		require.NoError(t, err)
		assert.Equal(t, "one", string(got))
		require.NoError(t, s.Put(ctx, "responses", "a", []byte("two"), hour))
		got, err = other.Get(ctx, "responses", "a")
		require.NoError(t, err)
		assert.Equal(t, "two", string(got), "a Put replaces")
		kept, err := other.Delete(ctx, "responses", "a")
		require.NoError(t, err)
		assert.True(t, kept)
		kept, err = s.Delete(ctx, "responses", "a")
		require.NoError(t, err)
		assert.False(t, kept, "deleted already")
		_, err = s.Get(ctx, "responses", "a")
		require.ErrorIs(t, err, ErrNotFound)
		got, err = s.Get(ctx, "other", "a")
		require.NoError(t, err)
		assert.Equal(t, "elsewhere", string(got), "tables are apart")
	})
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name string
		lim  Limits
		puts []string // key=value
		kept []string
		gone []string
	}{
		{name: "max", lim: Limits{TTL: time.Hour, Max: 3}, puts: []string{"a=1", "b=2", "c=3", "d=4", "e=5"}, kept: []string{"c", "d", "e"}, gone: []string{"a", "b"}},
		{name: "bytes", lim: Limits{TTL: time.Hour, MaxBytes: 25}, puts: []string{"a=0123456789", "b=0123456789", "c=0123456789"}, kept: []string{"b", "c"}, gone: []string{"a"}},
		{name: "a replaced value counts once", lim: Limits{TTL: time.Hour, MaxBytes: 25}, puts: []string{"a=0123456789", "b=0123456789", "b=0123456789", "b=0123456789"}, kept: []string{"a", "b"}},
		{name: "a replaced key is new again", lim: Limits{TTL: time.Hour, Max: 2}, puts: []string{"a=1", "b=2", "a=3", "c=4"}, kept: []string{"a", "c"}, gone: []string{"b"}},
		{name: "one value over the bytes", lim: Limits{TTL: time.Hour, MaxBytes: 5}, puts: []string{"a=1", "b=0123456789"}, gone: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
				ctx := t.Context()
				for _, p := range tt.puts {
					k, v, _ := strings.Cut(p, "=")
					require.NoError(t, s.Put(ctx, "t", k, []byte(v), tt.lim))
				}
				for _, k := range tt.kept {
					_, err := s.Get(ctx, "t", k)
					assert.NoError(t, err, "%s kept", k)
				}
				for _, k := range tt.gone {
					_, err := s.Get(ctx, "t", k)
					assert.ErrorIs(t, err, ErrNotFound, "%s evicted", k)
				}
			})
		})
	}
}

func TestExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx := t.Context()
		short := Limits{TTL: 400 * time.Millisecond}
		require.NoError(t, s.Put(ctx, "t", "old", []byte("x"), short))
		require.NoError(t, s.Add(ctx, "c", "old", map[string]int64{"n": 1}, 400*time.Millisecond))
		e.sleep(600 * time.Millisecond)
		// The new value lives long: with Redis the clock is real, and a
		// runner stalled for 400 ms between this Put and its Get below
		// would find it expired too.
		require.NoError(t, s.Put(ctx, "t", "new", []byte("y"), Limits{TTL: time.Hour}))
		_, err := s.Get(ctx, "t", "old")
		assert.ErrorIs(t, err, ErrNotFound)
		kept, err := s.Delete(ctx, "t", "old")
		require.NoError(t, err)
		assert.False(t, kept, "an expired value was not kept")
		_, err = s.Get(ctx, "t", "new")
		assert.NoError(t, err)
		got, err := s.Counters(ctx, "c", "old")
		require.NoError(t, err)
		assert.Empty(t, got)
		// Counters added to after expiry start again from zero.
		require.NoError(t, s.Add(ctx, "c", "old", map[string]int64{"n": 2}, time.Hour))
		got, err = s.Counters(ctx, "c", "old")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"n": 2}, got)
	})
}

func TestCountersAddUpAcrossWriters(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx := t.Context()
		stores := []Store{s, replica()}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 25 {
					assert.NoError(t, stores[i%2].Add(ctx, "usage", "2026112611", map[string]int64{"k|openai|gpt|web|requests": 1, "k|openai|gpt|web|input": 10}, time.Hour))
				}
			})
		}
		wg.Wait()
		require.NoError(t, s.Add(ctx, "usage", "2026112612", map[string]int64{"other": 5}, time.Hour))
		got, err := stores[1].Counters(ctx, "usage", "2026112611")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"k|openai|gpt|web|requests": 200, "k|openai|gpt|web|input": 2000}, got)
		got, err = s.Counters(ctx, "usage", "none")
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

func TestContextEnded(t *testing.T) {
	eachEngine(t, func(t *testing.T, e engine, s Store, replica func() Store) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.ErrorIs(t, s.Put(ctx, "t", "a", []byte("x"), hour), context.Canceled)
		_, err := s.Get(ctx, "t", "a")
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestFileSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Put(t.Context(), "responses", "resp_1", []byte(`{"id":"resp_1"}`), hour))
	require.NoError(t, s.Add(t.Context(), "usage", "h", map[string]int64{"n": 3}, time.Hour))
	require.NoError(t, s.Close())

	s, err = Open(t.Context(), Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Get(t.Context(), "responses", "resp_1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"resp_1"}`, string(got))
	c, err := s.Counters(t.Context(), "usage", "h")
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"n": 3}, c)
	assert.FileExists(t, filepath.Join(dir, FileName))
}

func TestOpenErrorsNameTheSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	held := t.TempDir()
	first, err := Open(t.Context(), Options{Dir: held})
	require.NoError(t, err)
	defer first.Close()
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "missing dir", opts: Options{Dir: filepath.Join(t.TempDir(), "nope")}, want: []string{"STATE_DIR=", "does not exist"}},
		{name: "not a dir", opts: Options{Dir: file}, want: []string{"STATE_DIR=", "not a directory"}},
		{name: "held by another process", opts: Options{Dir: held}, want: []string{"STATE_DIR=", "another gateway process"}},
		{name: "unknown scheme", opts: Options{URL: "postgres://u:secret@db/x"}, want: []string{"STATE_URL=", "redis://"}},
		{name: "unknown sync", opts: Options{Dir: t.TempDir(), Sync: "everysec"}, want: []string{`STATE_SYNC="everysec"`, "second", "always"}},
		{name: "redis unreachable", opts: Options{URL: "redis://:hunter2@127.0.0.1:1/0", ConnectTimeout: 1500 * time.Millisecond}, want: []string{"STATE_URL=redis://:xxxxx@127.0.0.1:1/0", "did not answer within 1.5s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(t.Context(), tt.opts)
			if s != nil {
				_ = s.Close()
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "secret")
			assert.NotContains(t, err.Error(), "hunter2")
			assert.Less(t, time.Since(start), 5*time.Second, "the wait is bounded")
		})
	}
	// A read-only directory: one without write permission, or, for root
	// (whom permissions do not stop), /proc, which no one can write.
	ro := "/proc"
	if os.Geteuid() != 0 {
		ro = t.TempDir()
		require.NoError(t, os.Chmod(ro, 0o500))
	}
	_, err = Open(t.Context(), Options{Dir: ro})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "STATE_DIR="+ro+" is not writable")
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/xdg")
	d, err := DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, "/var/xdg/cursor2api", d)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	d, err = DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.local/state/cursor2api", d)

	// Unset, STATE_DIR defaults there and is created.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	s, err := Open(t.Context(), Options{})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, filepath.Join(os.Getenv("XDG_STATE_HOME"), "cursor2api", FileName), s.(*File).Path())
}

// failing is a store whose writes fail while down is set.
type failing struct {
	Store
	mu   sync.Mutex
	down bool
}

func (f *failing) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }
func (f *failing) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("connection refused")
	}
	return nil
}
func (f *failing) Put(ctx context.Context, table, key string, v []byte, lim Limits) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Store.Put(ctx, table, key, v, lim)
}
func (f *failing) Ping(ctx context.Context) error { return f.err() }

func TestQueueRetriesWithinItsBound(t *testing.T) {
	store := &failing{Store: NewMemory(nil), down: true}
	q := NewQueue(store, 3, nil)
	put := func(k string) func(context.Context) error {
		return func(ctx context.Context) error { return store.Put(ctx, "t", k, []byte(k), hour) }
	}
	for i := range 5 {
		assert.Error(t, q.Write(t.Context(), "put", put(fmt.Sprint(i))))
	}
	st := q.Stats()
	assert.Equal(t, QueueStats{Engine: "memory", Status: "degraded", Queued: 3, Failed: 5, Dropped: 2, LastError: "connection refused"}, st)
	q.Retry(t.Context()) // still down: nothing lost but the dropped
	assert.Equal(t, 3, q.Stats().Queued)

	store.set(false)
	q.Retry(t.Context())
	st = q.Stats()
	assert.Equal(t, "ok", st.Status)
	assert.Equal(t, 0, st.Queued)
	for i, want := range []bool{false, false, true, true, true} {
		_, err := store.Get(t.Context(), "t", fmt.Sprint(i))
		assert.Equal(t, want, err == nil, "write %d", i)
	}
	// With nothing queued, a retry pings: a lost store is seen between writes.
	store.set(true)
	q.Retry(t.Context())
	assert.Equal(t, "degraded", q.Stats().Status)
}

func TestQueueOnALostRedis(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open(t.Context(), Options{URL: srv.URL()})
	require.NoError(t, err)
	defer s.Close()
	q := NewQueue(s, 10, nil)
	srv.Stop()
	start := time.Now()
	err = q.Write(t.Context(), "put", func(ctx context.Context) error { return s.Put(ctx, "t", "k", []byte("v"), hour) })
	require.Error(t, err)
	assert.Less(t, time.Since(start), 3*time.Second, "a lost Redis holds a write for the timeout at most")
	assert.Equal(t, "degraded", q.Stats().Status)

	srv.Start()
	require.Eventually(t, func() bool { q.Retry(t.Context()); return q.Stats().Queued == 0 }, 10*time.Second, 100*time.Millisecond)
	got, err := s.Get(t.Context(), "t", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
	assert.Equal(t, "ok", q.Stats().Status)
}

// BenchmarkEnginePut puts the Responses door's kind of value (5 KB,
// within the default limits) into each engine, one writer: what a kept
// response costs the request that keeps it.
func BenchmarkEnginePut(b *testing.B) {
	value := make([]byte, 5000)
	lim := Limits{TTL: time.Hour, Max: 1000, MaxBytes: 256 << 20}
	opens := []struct {
		name string
		open func(b *testing.B) Store
	}{
		{name: "memory", open: func(b *testing.B) Store { return NewMemory(nil) }},
		{name: "file,sync=second", open: func(b *testing.B) Store {
			s, err := Open(b.Context(), Options{Dir: b.TempDir(), Sync: SyncSecond})
			require.NoError(b, err)
			return s
		}},
		{name: "file,sync=always", open: func(b *testing.B) Store {
			s, err := Open(b.Context(), Options{Dir: b.TempDir(), Sync: SyncAlways})
			require.NoError(b, err)
			return s
		}},
		{name: "redis", open: func(b *testing.B) Store {
			s, err := Open(b.Context(), Options{URL: redistest.Start(b).URL(), ConnectTimeout: 5 * time.Second})
			require.NoError(b, err)
			return s
		}},
	}
	for _, o := range opens {
		b.Run(o.name, func(b *testing.B) {
			s := o.open(b)
			defer s.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Put(b.Context(), "responses", "resp_"+strconv.Itoa(i), value, lim); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

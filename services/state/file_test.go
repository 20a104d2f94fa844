package state

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

// openTestFile opens a File in a new directory on the clock now.
func openTestFile(t testing.TB, dir string, now func() time.Time) *File {
	t.Helper()
	s, err := Open(context.Background(), Options{Dir: dir, Now: now})
	require.NoError(t, err)
	f := s.(*File)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// queued is the number of writes waiting for the writer.
func (f *File) queued() int {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return len(f.queue)
}

// A holder is a write that blocks the writer inside its transaction
// until released, so that the writes queued meanwhile form one known
// group. The test's end releases it, so a failed test does not hang.
type holder struct {
	f       *File
	entered chan struct{}
	rel     chan struct{}
	done    chan error
	once    sync.Once
}

func newHolder(t *testing.T, f *File) *holder {
	h := &holder{f: f, entered: make(chan struct{}), rel: make(chan struct{}), done: make(chan error, 1)}
	t.Cleanup(func() { h.once.Do(func() { close(h.rel) }) }) // before f's Close, registered earlier
	return h
}

// write is the holding write.
func (h *holder) write() {
	var entered sync.Once
	h.done <- h.f.write(context.Background(), func(*bolt.Tx) error {
		entered.Do(func() { close(h.entered) })
		<-h.rel
		return nil
	})
}

func (h *holder) release(t *testing.T) {
	t.Helper()
	h.once.Do(func() { close(h.rel) })
	assert.NoError(t, receive(t, h.done, "the holding write commits"))
}

// hold blocks the writer until release is called.
func hold(t *testing.T, f *File) (release func()) {
	t.Helper()
	h := newHolder(t, f)
	go h.write()
	receive(t, h.entered, "the writer takes the holding write")
	return func() { h.release(t) }
}

// receive waits a bounded time for a value of ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out waiting: "+what)
		panic("unreachable")
	}
}

// queueInOrder starts each call in a goroutine of its own once the one
// before it is queued, so they queue in the order given.
func queueInOrder(t *testing.T, f *File, calls []func()) {
	t.Helper()
	base := f.queued()
	for i, call := range calls {
		go call()
		require.Eventually(t, func() bool { return f.queued() == base+i+1 }, 10*time.Second, time.Millisecond, "write %d queued", i)
	}
}

// fileOp is one write of the tests: put, delete, add, or panic (a write
// whose transaction function panics).
type fileOp struct {
	kind       string
	table, key string
	value      string
	lim        Limits
	add        map[string]int64
}

// opResult is what a write returned.
type opResult struct {
	err  string
	kept bool
}

func (o fileOp) apply(ctx context.Context, f *File) opResult {
	var err error
	var kept bool
	switch o.kind {
	case "put":
		err = f.Put(ctx, o.table, o.key, []byte(o.value), o.lim)
	case "delete":
		kept, err = f.Delete(ctx, o.table, o.key)
	case "add":
		err = f.Add(ctx, o.table, o.key, o.add, time.Hour)
	case "panic":
		err = f.write(ctx, func(*bolt.Tx) error { panic("a broken record") })
	default:
		panic("unknown op " + o.kind)
	}
	r := opResult{kept: kept}
	if err != nil {
		r.err = err.Error()
	}
	return r
}

// fileState is what a File holds of the tables and keys ops touch.
func fileState(t *testing.T, f *File, ops []fileOp) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range ops {
		switch o.kind {
		case "put", "delete":
			v, err := f.Get(t.Context(), o.table, o.key)
			if errors.Is(err, ErrNotFound) {
				out["value "+o.table+"/"+o.key] = "not found"
				continue
			}
			require.NoError(t, err)
			out["value "+o.table+"/"+o.key] = string(v)
		case "add":
			c, err := f.Counters(t.Context(), o.table, o.key)
			require.NoError(t, err)
			out["counters "+o.table+"/"+o.key] = fmt.Sprint(c)
		}
	}
	return out
}

// TestFileGroupIsOneByOne queues writes while the writer is held, so
// they commit as one group, and compares every result and the file's
// contents with the same writes done one by one on another file.
func TestFileGroupIsOneByOne(t *testing.T) {
	max3 := Limits{TTL: time.Hour, Max: 3}
	bytes25 := Limits{TTL: time.Hour, MaxBytes: 25}
	put := func(table, key, value string, lim Limits) fileOp {
		return fileOp{kind: "put", table: table, key: key, value: value, lim: lim}
	}
	del := func(table, key string) fileOp { return fileOp{kind: "delete", table: table, key: key} }
	add := func(key string, n map[string]int64) fileOp {
		return fileOp{kind: "add", table: "usage", key: key, add: n}
	}
	tests := []struct {
		name string
		// before are committed one by one first; ops are the group.
		before, ops []fileOp
		// wantFailed is the number of ops that fail.
		wantFailed int
	}{
		{name: "eviction within Max, oldest first", before: []fileOp{put("r", "a", "1", max3)}, ops: []fileOp{
			put("r", "b", "2", max3), put("r", "c", "3", max3), put("r", "b", "4", max3), put("r", "d", "5", max3), put("r", "e", "6", max3),
		}},
		{name: "eviction within MaxBytes", ops: []fileOp{
			put("r", "a", "0123456789", bytes25), put("r", "b", "0123456789", bytes25), put("r", "a", "01234", bytes25), put("r", "c", "0123456789", bytes25),
		}},
		{name: "counters add up", before: []fileOp{add("h1", map[string]int64{"n": 5})}, ops: []fileOp{
			add("h1", map[string]int64{"n": 1, "in": 10}), add("h2", map[string]int64{"n": 1}), add("h1", map[string]int64{"n": 1, "out": 3}), add("h1", map[string]int64{"in": -4}),
		}},
		{name: "deletes see the writes before them", before: []fileOp{put("r", "old", "x", hour)}, ops: []fileOp{
			del("r", "old"), del("r", "old"), put("r", "a", "1", hour), del("r", "a"), put("r", "a", "2", hour), del("r", "never"), del("nosuchtable", "a"),
		}},
		{name: "a bad put in the middle", before: []fileOp{put("r", "a", "0", max3)}, ops: []fileOp{
			put("r", "b", "1", max3), del("r", "a"), put("r", "", "empty key", max3), put("r", "c", "2", max3), add("h", map[string]int64{"n": 1}),
		}, wantFailed: 1},
		{name: "bad ops first, last and together", ops: []fileOp{
			add("", map[string]int64{"n": 1}), put("r", "a", "1", hour), del("r", "a"), put("r", "", "x", hour), fileOp{kind: "panic"}, put("r", "a", "2", hour), add("h", map[string]int64{"n": 2}), put("r", "", "y", hour),
		}, wantFailed: 4},
		{name: "a panicking write alone among good ones", ops: []fileOp{
			put("r", "a", "1", max3), fileOp{kind: "panic"}, put("r", "b", "2", max3),
		}, wantFailed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1_800_000_000, 0)}
			oneByOne := openTestFile(t, t.TempDir(), c.now)
			grouped := openTestFile(t, t.TempDir(), c.now)
			for _, o := range tt.before {
				require.Empty(t, o.apply(t.Context(), oneByOne).err)
				require.Empty(t, o.apply(t.Context(), grouped).err)
			}
			want := make([]opResult, len(tt.ops))
			for i, o := range tt.ops {
				want[i] = o.apply(t.Context(), oneByOne)
			}
			failed, segments, inSegment := 0, 0, false
			for _, r := range want {
				if r.err != "" {
					failed++
					inSegment = false
				} else if !inSegment {
					segments++
					inSegment = true
				}
			}
			require.Equal(t, tt.wantFailed, failed, "the ops done one by one: %+v", want)

			release := hold(t, grouped)
			commits := grouped.commits.Load()
			got := make([]opResult, len(tt.ops))
			var wg sync.WaitGroup
			calls := make([]func(), len(tt.ops))
			for i, o := range tt.ops {
				wg.Add(1)
				calls[i] = func() { defer wg.Done(); got[i] = o.apply(t.Context(), grouped) }
			}
			queueInOrder(t, grouped, calls)
			release()
			wg.Wait()

			assert.Equal(t, want, got, "each write's result")
			assert.Equal(t, fileState(t, oneByOne, append(tt.before, tt.ops...)), fileState(t, grouped, append(tt.before, tt.ops...)), "the file's contents")
			// The holding write, then one commit for each run of good
			// writes between the bad ones.
			assert.Equal(t, int64(1+segments), grouped.commits.Load()-commits, "commits")
		})
	}
}

// TestFileConcurrentWrites runs many writers at once, free to group as
// they come, and checks every result and value against what each
// writer's ops must leave whatever their interleaving.
func TestFileConcurrentWrites(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := openTestFile(t, t.TempDir(), time.Now)
	const writers, each = 16, 12
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			ctx := context.Background()
			for j := range each {
				key := fmt.Sprintf("w%d-%d", w, j)
				assert.NoError(t, f.Put(ctx, "r", key, []byte(key), hour))
				assert.NoError(t, f.Add(ctx, "usage", "h", map[string]int64{"n": 1, fmt.Sprintf("w%d", w): int64(j)}, time.Hour))
				if j%2 == 1 {
					kept, err := f.Delete(ctx, "r", key)
					assert.NoError(t, err)
					assert.True(t, kept, "%s was put", key)
					kept, err = f.Delete(ctx, "r", key)
					assert.NoError(t, err)
					assert.False(t, kept, "%s was deleted", key)
				}
			}
		})
	}
	wg.Wait()
	want := map[string]int64{"n": writers * each}
	for w := range writers {
		want[fmt.Sprintf("w%d", w)] = each * (each - 1) / 2
		for j := range each {
			key := fmt.Sprintf("w%d-%d", w, j)
			v, err := f.Get(t.Context(), "r", key)
			if j%2 == 1 {
				assert.ErrorIs(t, err, ErrNotFound, key)
			} else if assert.NoError(t, err, key) {
				assert.Equal(t, key, string(v))
			}
		}
	}
	got, err := f.Counters(t.Context(), "usage", "h")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	writes := writers * (each*2 + each)
	t.Logf("%d writes in %d commits", writes, f.commits.Load())
	assert.LessOrEqual(t, f.commits.Load(), int64(writes))
	require.NoError(t, f.Close())
}

func TestFileContextEndsInTheQueue(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tests := []struct {
		name string
		// taken: the ctx ends after the writer took the write into a
		// transaction (that has not committed yet); else while queued.
		taken   bool
		wantErr error
		kept    bool
	}{
		{name: "cancelled while queued: not applied", wantErr: context.Canceled},
		{name: "cancelled once taken: completes", taken: true, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openTestFile(t, t.TempDir(), time.Now)
			release := hold(t, f)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			result := make(chan error, 1)
			calls := []func(){func() { result <- f.Put(ctx, "r", "a", []byte("v"), hour) }}
			second := newHolder(t, f)
			if tt.taken {
				// A second holding write after the Put in its group:
				// once it runs, the Put has run in the same transaction.
				calls = append(calls, second.write)
				queueInOrder(t, f, calls)
				release()
				receive(t, second.entered, "the second holding write runs")
			} else {
				queueInOrder(t, f, calls)
			}
			cancel()
			if tt.taken {
				select {
				case err := <-result:
					require.Failf(t, "returned before its transaction committed", "%v", err)
				case <-time.After(50 * time.Millisecond):
				}
				second.release(t)
			}
			assert.ErrorIs(t, receive(t, result, "the Put returns"), tt.wantErr)
			if !tt.taken {
				release()
			}
			// A write after it commits, so the queue has been seen.
			require.NoError(t, f.Put(t.Context(), "r", "after", []byte("x"), hour))
			_, err := f.Get(t.Context(), "r", "a")
			if tt.kept {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrNotFound)
			}
			require.NoError(t, f.Close())
		})
	}
}

func TestFileCloseWaitsForQueuedWrites(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	f := openTestFile(t, dir, time.Now)
	release := hold(t, f)
	const n = 20
	results := make(chan error, n)
	for i := range n {
		go func() { results <- f.Put(context.Background(), "r", strconv.Itoa(i), []byte("v"), hour) }()
	}
	require.Eventually(t, func() bool { return f.queued() == n }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	require.Eventually(t, func() bool { f.wmu.Lock(); defer f.wmu.Unlock(); return f.closed }, 10*time.Second, time.Millisecond)

	// No write after Close.
	assert.ErrorIs(t, f.Put(t.Context(), "r", "late", []byte("v"), hour), ErrClosed)
	_, err := f.Delete(t.Context(), "r", "0")
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, f.Add(t.Context(), "usage", "h", map[string]int64{"n": 1}, time.Hour), ErrClosed)
	select {
	case err := <-closed:
		require.Failf(t, "Close returned with writes queued", "%v", err)
	case <-time.After(50 * time.Millisecond):
	}

	f.wmu.Lock()
	queued := slices.Clone(f.queue)
	f.wmu.Unlock()
	release()
	require.NoError(t, receive(t, closed, "Close returns"))
	for i, op := range queued {
		select {
		case <-op.done:
		default:
			assert.Failf(t, "Close returned before a queued write was done", "write %d", i)
		}
	}
	for range n {
		assert.NoError(t, receive(t, results, "a queued Put returns"))
	}
	require.NoError(t, f.Close(), "a second Close")

	again := openTestFile(t, dir, time.Now)
	for i := range n {
		_, err := again.Get(t.Context(), "r", strconv.Itoa(i))
		assert.NoError(t, err, "write %d committed before Close returned", i)
	}
	_, err = again.Get(t.Context(), "r", "late")
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, again.Close())
}

// BenchmarkFilePut puts 2 KB values with one writer and with many; its
// commits/op is below 1 when writes commit in groups.
func BenchmarkFilePut(b *testing.B) {
	value := make([]byte, 2048)
	lim := Limits{TTL: time.Hour, Max: 10000}
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			f := openTestFile(b, b.TempDir(), time.Now)
			st := f.db.Stats()
			pages, commits := st.TxStats.GetWrite(), f.commits.Load()
			var n atomic.Int64
			b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			if writers == 1 {
				for i := 0; i < b.N; i++ {
					if err := f.Put(context.Background(), "responses", strconv.Itoa(i), value, lim); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := f.Put(context.Background(), "responses", strconv.FormatInt(n.Add(1), 10), value, lim); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			st = f.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetWrite()-pages)/float64(b.N), "pagewrites/op")
			b.ReportMetric(float64(f.commits.Load()-commits)/float64(b.N), "commits/op")
		})
	}
}

package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

// openTestFile opens a File in dir on the clock now, with STATE_SYNC
// mode, logging into logs when it is not nil.
func openTestFile(t testing.TB, dir string, now func() time.Time, mode string, logs *bytes.Buffer) *File {
	t.Helper()
	f, err := openTestFileErr(t, dir, now, mode, logs)
	require.NoError(t, err)
	return f
}

func openTestFileErr(t testing.TB, dir string, now func() time.Time, mode string, logs *bytes.Buffer) (*File, error) {
	t.Helper()
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := Open(context.Background(), Options{Dir: dir, Now: now, Sync: mode, Logger: logger})
	if err != nil {
		return nil, err
	}
	f := s.(*File)
	t.Cleanup(func() { _ = f.Close() })
	return f, nil
}

// dumpEntry is one value of a dump, in its table's order.
type dumpEntry struct {
	Key, Value string
	Expires    int64
}

// dumpCounters is one key's counters in a dump.
type dumpCounters struct {
	Values  map[string]int64
	Expires int64
}

// stateDump is the whole of a memState, comparable: every table's
// values in their order (expired ones too, until they are gone) and its
// byte count, every counter.
type stateDump struct {
	Tables   map[string][]dumpEntry
	Bytes    map[string]int64
	Counters map[string]map[string]dumpCounters
}

func dump(s *memState) stateDump {
	d := stateDump{Tables: map[string][]dumpEntry{}, Bytes: map[string]int64{}, Counters: map[string]map[string]dumpCounters{}}
	for name, t := range s.tables {
		if t.order.Len() == 0 {
			continue // an empty table is no state
		}
		for el := t.order.Front(); el != nil; el = el.Next() {
			e := el.Value.(*memEntry)
			d.Tables[name] = append(d.Tables[name], dumpEntry{Key: e.key, Value: string(e.value), Expires: e.expires.UnixNano()})
		}
		d.Bytes[name] = t.bytes
	}
	for name, byKey := range s.counters {
		for key, c := range byKey {
			if d.Counters[name] == nil {
				d.Counters[name] = map[string]dumpCounters{}
			}
			d.Counters[name][key] = dumpCounters{Values: c.values, Expires: c.expires.UnixNano()}
		}
	}
	return d
}

func (f *File) dump() stateDump {
	f.mu.Lock()
	defer f.mu.Unlock()
	return dump(&f.state)
}

func (m *Memory) dump() stateDump {
	m.mu.Lock()
	defer m.mu.Unlock()
	return dump(&m.memState)
}

// step is one step of a scripted run: a write, or time passing.
type step struct {
	put, del, add string // table/key (put: table/key=value)
	get           string // table/key, read on a file store only
	lim           Limits
	n             map[string]int64
	ttl           time.Duration
	wait          time.Duration
}

func put(tk, v string, lim Limits) step { return step{put: tk + "=" + v, lim: lim} }
func del(tk string) step                { return step{del: tk} }
func add(tk string, n map[string]int64, ttl time.Duration) step {
	return step{add: tk, n: n, ttl: ttl}
}
func wait(d time.Duration) step { return step{wait: d} }
func get(tk string) step        { return step{get: tk} }

// run does the steps on s, time passing on c.
func run(t *testing.T, s Store, c *clock, steps []step) {
	t.Helper()
	ctx := t.Context()
	for _, st := range steps {
		switch {
		case st.put != "":
			tk, v, _ := strings.Cut(st.put, "=")
			table, key, _ := strings.Cut(tk, "/")
			require.NoError(t, s.Put(ctx, table, key, []byte(v), st.lim))
		case st.del != "":
			table, key, _ := strings.Cut(st.del, "/")
			_, err := s.Delete(ctx, table, key)
			require.NoError(t, err)
		case st.add != "":
			table, key, _ := strings.Cut(st.add, "/")
			require.NoError(t, s.Add(ctx, table, key, st.n, st.ttl))
		case st.get != "":
			// The memory engine drops an expired value it is asked for;
			// the file engine's log records no reads, so its memory must
			// not change on one either.
			if _, ok := s.(*File); ok {
				table, key, _ := strings.Cut(st.get, "/")
				_, err := s.Get(ctx, table, key)
				require.ErrorIs(t, err, ErrNotFound)
			}
		default:
			c.add(st.wait)
		}
	}
}

var replayScripts = []struct {
	name  string
	steps []step
}{
	{name: "eviction by Max", steps: []step{
		put("r/a", "1", Limits{TTL: time.Hour, Max: 3}), put("r/b", "2", Limits{TTL: time.Hour, Max: 3}), put("r/c", "3", Limits{TTL: time.Hour, Max: 3}),
		put("r/a", "4", Limits{TTL: time.Hour, Max: 3}), put("r/d", "5", Limits{TTL: time.Hour, Max: 3}), put("other/a", "x", hour),
	}},
	{name: "eviction by MaxBytes", steps: []step{
		put("r/a", "0123456789", Limits{TTL: time.Hour, MaxBytes: 25}), put("r/b", "0123456789", Limits{TTL: time.Hour, MaxBytes: 25}),
		put("r/a", "01234", Limits{TTL: time.Hour, MaxBytes: 25}), put("r/c", "0123456789", Limits{TTL: time.Hour, MaxBytes: 25}),
	}},
	{name: "expiry on a clock", steps: []step{
		put("r/short", "s", Limits{TTL: time.Minute}), put("r/long", "l", Limits{TTL: time.Hour}), put("r/mid", "m", Limits{TTL: 10 * time.Minute}),
		add("u/h1", map[string]int64{"n": 1}, time.Minute), wait(2 * time.Minute),
		// The front (short) has expired: this Put evicts it; mid and long stay.
		put("r/new", "n", Limits{TTL: time.Hour, Max: 4}), add("u/h2", map[string]int64{"n": 2}, time.Hour), wait(20 * time.Minute),
		// mid expired, but not at the front: it stays until evicted,
		// and counts towards Max.
		get("r/mid"), put("r/newer", "n", Limits{TTL: time.Hour, Max: 4}), get("r/mid"),
	}},
	{name: "deletes and counters", steps: []step{
		put("r/a", "1", hour), put("r/b", "2", hour), del("r/a"), del("r/none"), del("none/a"),
		add("u/h", map[string]int64{"in": 3, "out": 4}, time.Hour), add("u/h", map[string]int64{"in": -1, "new": 1}, time.Hour), add("u/empty", nil, time.Hour),
		put("r/a", "3", hour), put("r/", "empty key", hour), put("r/v", "", hour),
	}},
}

// TestFileReplayEqualsLive runs scripts of writes on a file store and on
// a memory store alike, and checks that the file's live state is the
// memory store's, and that the log replayed (later, on the same clock)
// is the live state exactly, expired entries and eviction order
// included.
func TestFileReplayEqualsLive(t *testing.T) {
	for _, mode := range []string{SyncSecond, SyncAlways} {
		for _, tt := range replayScripts {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				c := &clock{t: time.Unix(1_800_000_000, 0)}
				dir := t.TempDir()
				f := openTestFile(t, dir, c.now, mode, nil)
				m := NewMemory(c.now)
				run(t, f, c, tt.steps)
				mc := &clock{t: time.Unix(1_800_000_000, 0)}
				m.now = mc.now
				run(t, m, mc, tt.steps)
				live := f.dump()
				assert.Equal(t, m.dump(), live, "the file's live state is the memory engine's")
				require.NoError(t, f.Close())

				c.add(time.Minute)
				again := openTestFile(t, dir, c.now, mode, nil)
				assert.Equal(t, live, again.dump(), "the replayed log")
				require.NoError(t, again.Close())
			})
		}
	}
}

// records is the framing of the log at path: each record's offset and
// length (frame included).
func records(t *testing.T, path string) (offsets, lengths []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for off := int64(headerLen); off < int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[off:])) + frameLen
		offsets, lengths = append(offsets, off), append(lengths, n)
		off += n
	}
	return offsets, lengths
}

func TestFileTornTail(t *testing.T) {
	tests := []struct {
		name string
		// tear damages the log whose last record is at off, n bytes.
		tear func(t *testing.T, path string, off, n int64)
		// lost: the last write is gone; else only junk after it.
		lost bool
	}{
		{name: "cut mid-payload", lost: true, tear: func(t *testing.T, path string, off, n int64) {
			require.NoError(t, os.Truncate(path, off+n-3))
		}},
		{name: "cut mid-frame", lost: true, tear: func(t *testing.T, path string, off, n int64) {
			require.NoError(t, os.Truncate(path, off+5))
		}},
		{name: "a byte flipped in the last record", lost: true, tear: func(t *testing.T, path string, off, n int64) {
			flip(t, path, off+n-2)
		}},
		{name: "its CRC flipped", lost: true, tear: func(t *testing.T, path string, off, n int64) {
			flip(t, path, off+5)
		}},
		{name: "its length garbled", lost: true, tear: func(t *testing.T, path string, off, n int64) {
			flip(t, path, off+3)
		}},
		{name: "junk appended", tear: func(t *testing.T, path string, off, n int64) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte{9, 0, 0, 0, 1, 2})
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := openTestFile(t, dir, time.Now, SyncSecond, nil)
			require.NoError(t, f.Put(t.Context(), "r", "a", []byte("first"), hour))
			require.NoError(t, f.Add(t.Context(), "u", "h", map[string]int64{"n": 1}, time.Hour))
			require.NoError(t, f.Put(t.Context(), "r", "b", []byte("the last write"), hour))
			require.NoError(t, f.Close())
			offs, lens := records(t, f.Path())
			last, n := offs[len(offs)-1], lens[len(lens)-1]
			tt.tear(t, f.Path(), last, n)
			torn, err := os.Stat(f.Path())
			require.NoError(t, err)

			var logs bytes.Buffer
			again := openTestFile(t, dir, time.Now, SyncSecond, &logs)
			_, err = again.Get(t.Context(), "r", "a")
			assert.NoError(t, err, "the records before the tear")
			c, err := again.Counters(t.Context(), "u", "h")
			require.NoError(t, err)
			assert.Equal(t, map[string]int64{"n": 1}, c)
			_, err = again.Get(t.Context(), "r", "b")
			good := last + n
			if tt.lost {
				assert.ErrorIs(t, err, ErrNotFound, "the torn record is dropped")
				good = last
			} else {
				assert.NoError(t, err)
			}
			assert.Contains(t, logs.String(), `"level":"WARN"`)
			assert.Contains(t, logs.String(), fmt.Sprintf(`"dropped_bytes":%d`, torn.Size()-good))
			fi, err := os.Stat(f.Path())
			require.NoError(t, err)
			assert.Equal(t, good, fi.Size(), "the tail is cut off")

			// Writes go on after the cut, and are read back.
			require.NoError(t, again.Put(t.Context(), "r", "c", []byte("after"), hour))
			require.NoError(t, again.Close())
			logs.Reset()
			third := openTestFile(t, dir, time.Now, SyncSecond, &logs)
			got, err := third.Get(t.Context(), "r", "c")
			require.NoError(t, err)
			assert.Equal(t, "after", string(got))
			assert.Empty(t, logs.String(), "a sound log opens without warnings")
		})
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[off] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func TestFileOpenRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
		want  []string
	}{
		{name: "a record of an unknown kind", want: []string{"STATE_DIR=", FileName, "kind 99", "newer gateway"}, write: func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(endRecord(append(beginRecord(nil, 99), "future"...)))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{name: "a sound record with a field past its end", want: []string{"STATE_DIR=", FileName, "past the record's end"}, write: func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(endRecord(append(beginRecord(nil, recDelete), 2, 40, 'x')))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{name: "a newer version", want: []string{"STATE_DIR=", FileName, "version 2"}, write: func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(logMagic)] = 2
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
		{name: "not a log", want: []string{"STATE_DIR=", "is not a cursor2api state log"}, write: func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("SQLite format 3\x00 and more"), 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := openTestFile(t, dir, time.Now, SyncSecond, nil)
			require.NoError(t, f.Put(t.Context(), "r", "a", []byte("1"), hour))
			require.NoError(t, f.Close())
			tt.write(t, f.Path())
			before, err := os.ReadFile(f.Path())
			require.NoError(t, err)
			_, err = openTestFileErr(t, dir, time.Now, SyncSecond, nil)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			after, err := os.ReadFile(f.Path())
			require.NoError(t, err)
			assert.Equal(t, before, after, "the file is left as it was")
		})
	}
}

// TestFileCompaction fills a log with overwrites, expiries and
// evictions, compacts it, and checks that the live state is what it was
// but the expired, that the log shrank, that it replays to the same
// state, and that eviction goes on in the order it had.
func TestFileCompaction(t *testing.T) {
	for _, mode := range []string{SyncSecond, SyncAlways} {
		t.Run(mode, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			c := &clock{t: time.Unix(1_800_000_000, 0)}
			dir := t.TempDir()
			f := openTestFile(t, dir, c.now, mode, nil)
			f.mu.Lock()
			f.slack, f.checkAt = 1<<40, 1<<40 // no compaction until asked
			f.mu.Unlock()
			ctx := t.Context()
			max5 := Limits{TTL: time.Hour, Max: 5}
			require.NoError(t, f.Put(ctx, "r", "dies", []byte("soon"), Limits{TTL: time.Minute, Max: 5}))
			require.NoError(t, f.Add(ctx, "u", "old", map[string]int64{"n": 1}, time.Minute))
			value := bytes.Repeat([]byte("v"), 1000)
			for i := range 200 {
				require.NoError(t, f.Put(ctx, "r", strconv.Itoa(i%7), value, max5))
				require.NoError(t, f.Add(ctx, "u", "h", map[string]int64{"n": 1}, time.Hour))
			}
			c.add(2 * time.Minute)
			// Leaves "dies" at the table's front, expired, with "u/old".
			require.NoError(t, f.Put(ctx, "other", "k", []byte("x"), hour))
			before := f.dump()
			size := f.size

			f.mu.Lock()
			f.slack, f.checkAt = 1024, 0
			f.mu.Unlock()
			require.NoError(t, f.Put(ctx, "r", "2", value, max5)) // a write past the threshold compacts
			require.Equal(t, int64(1), f.compactions.Load())
			after := f.dump()
			assert.Less(t, f.size, size/10, "the log shrank")
			fi, err := os.Stat(f.Path())
			require.NoError(t, err)
			assert.Equal(t, f.size, fi.Size())
			assert.NoFileExists(t, f.Path()+".tmp")

			// The state before, the expired gone, then the Put.
			want := before
			want.Tables["r"] = slices.DeleteFunc(want.Tables["r"], func(e dumpEntry) bool { return e.Key == "dies" || e.Key == "2" })
			want.Tables["r"] = append(want.Tables["r"], dumpEntry{Key: "2", Value: string(value), Expires: c.now().Add(time.Hour).UnixNano()})
			want.Bytes["r"] = 5 * 1000
			delete(want.Counters["u"], "old")
			assert.Equal(t, want, after)

			// Writes after it go to the new log; it replays the same.
			require.NoError(t, f.Put(ctx, "r", "new", value, max5))
			live := f.dump()
			require.NoError(t, f.Close())
			again := openTestFile(t, dir, c.now, mode, nil)
			assert.Equal(t, live, again.dump())
			order := func(d stateDump) []string {
				var keys []string
				for _, e := range d.Tables["r"] {
					keys = append(keys, e.Key)
				}
				return keys
			}
			// The oldest, in the order from before the compaction, go first.
			wantOrder := order(live)[1:]
			require.NoError(t, again.Put(ctx, "r", "newest", value, max5))
			assert.Equal(t, append(wantOrder, "newest"), order(again.dump()))
			require.NoError(t, again.Close())
		})
	}
}

// TestFileCompactsOnItsOwn writes past the default threshold's shape
// (twice the live state plus the slack) and checks the log stays
// within it.
func TestFileCompactsOnItsOwn(t *testing.T) {
	dir := t.TempDir()
	f := openTestFile(t, dir, time.Now, SyncSecond, nil)
	f.mu.Lock()
	f.slack, f.checkAt = 64<<10, 64<<10
	f.mu.Unlock()
	value := bytes.Repeat([]byte("v"), 500)
	for i := range 2000 {
		require.NoError(t, f.Put(t.Context(), "r", strconv.Itoa(i), value, Limits{TTL: time.Hour, Max: 10}))
	}
	assert.Greater(t, f.compactions.Load(), int64(5))
	f.mu.Lock()
	live, size := snapshotSize(&f.state, f.now()), f.size
	f.mu.Unlock()
	assert.LessOrEqual(t, size, 2*live+64<<10+int64(len(value))+64)
	require.NoError(t, f.Close())
	again := openTestFile(t, dir, time.Now, SyncSecond, nil)
	assert.Equal(t, 10, again.state.len("r"))
	got, err := again.Get(t.Context(), "r", "1999")
	require.NoError(t, err)
	assert.Equal(t, value, got)
}

// TestFileAlwaysSharesSyncs runs writers at once in SyncAlways mode on a
// slow disk: each write is synced before it returns, and writes that wait
// together share a sync.
func TestFileAlwaysSharesSyncs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := openTestFile(t, t.TempDir(), time.Now, SyncAlways, nil)
	f.syncFile = func(file *os.File) error {
		time.Sleep(2 * time.Millisecond) // a disk's flush
		return fdatasync(file)
	}
	const writers, each = 16, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for j := range each {
				seq, err := f.put(context.Background(), "r", fmt.Sprintf("%d-%d", w, j), []byte("v"), hour)
				if !assert.NoError(t, err) {
					return
				}
				f.smu.Lock()
				synced := f.synced
				f.smu.Unlock()
				assert.GreaterOrEqual(t, synced, seq, "write %d returned before a sync covered it", seq)
			}
		})
	}
	wg.Wait()
	syncs := f.syncs.Load()
	t.Logf("%d writes, %d syncs", writers*each, syncs)
	assert.Less(t, syncs, int64(writers*each), "writes waiting together share syncs")
	assert.Positive(t, syncs)
	require.NoError(t, f.Close())
}

// TestFileSyncsASecondLater runs SyncSecond's syncer on a fake clock: a
// write is synced a second after it, not before; an idle store is not
// synced at all.
func TestFileSyncsASecondLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openTestFile(t, t.TempDir(), time.Now, SyncSecond, nil)
		synced := func() int64 { f.smu.Lock(); defer f.smu.Unlock(); return f.synced }
		synctest.Wait()
		assert.Zero(t, f.syncs.Load(), "nothing written, nothing synced")

		seq, err := f.put(t.Context(), "r", "a", []byte("v"), hour)
		require.NoError(t, err)
		seq2, err := f.put(t.Context(), "r", "b", []byte("v"), hour)
		require.NoError(t, err)
		synctest.Wait()
		assert.Less(t, synced(), seq, "not synced at once")
		time.Sleep(syncEvery - time.Millisecond)
		synctest.Wait()
		assert.Less(t, synced(), seq, "not synced before its second")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.GreaterOrEqual(t, synced(), seq2, "synced a second after the first write")
		assert.Equal(t, int64(1), f.syncs.Load(), "one sync for both")

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, int64(1), f.syncs.Load(), "an idle store is not synced")

		seq3, err := f.put(t.Context(), "r", "c", []byte("v"), hour)
		require.NoError(t, err)
		time.Sleep(syncEvery)
		synctest.Wait()
		assert.GreaterOrEqual(t, synced(), seq3)
		assert.Equal(t, int64(2), f.syncs.Load())
		require.NoError(t, f.Close())
	})
}

func TestFileOneProcessAtATime(t *testing.T) {
	dir := t.TempDir()
	first := openTestFile(t, dir, time.Now, SyncSecond, nil)
	start := time.Now()
	_, err := openTestFileErr(t, dir, time.Now, SyncSecond, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "STATE_DIR="+dir+": "+FileName+" is held by another gateway process; give each process its own STATE_DIR, or share state between replicas with STATE_URL=redis://")
	assert.GreaterOrEqual(t, time.Since(start), lockTimeout, "it waited for the holder to let go")
	require.NoError(t, first.Close())
	second := openTestFile(t, dir, time.Now, SyncSecond, nil)
	require.NoError(t, second.Ping(t.Context()))
}

func TestFileClosed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, mode := range []string{SyncSecond, SyncAlways} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			f := openTestFile(t, dir, time.Now, mode, nil)
			require.NoError(t, f.Put(t.Context(), "r", "a", []byte("v"), hour))
			require.NoError(t, f.Close())
			require.NoError(t, f.Close(), "a second Close")
			assert.ErrorIs(t, f.Put(t.Context(), "r", "late", []byte("v"), hour), ErrClosed)
			_, err := f.Delete(t.Context(), "r", "a")
			assert.ErrorIs(t, err, ErrClosed)
			assert.ErrorIs(t, f.Add(t.Context(), "u", "h", map[string]int64{"n": 1}, time.Hour), ErrClosed)
			assert.ErrorIs(t, f.Ping(t.Context()), ErrClosed)
			f.smu.Lock()
			assert.Equal(t, f.written.Load(), f.synced, "Close synced every write")
			f.smu.Unlock()

			again := openTestFile(t, dir, time.Now, mode, nil)
			_, err = again.Get(t.Context(), "r", "a")
			assert.NoError(t, err)
			_, err = again.Get(t.Context(), "r", "late")
			assert.ErrorIs(t, err, ErrNotFound)
			require.NoError(t, again.Close())
		})
	}
}

func TestFileEndedContextWritesNothing(t *testing.T) {
	f := openTestFile(t, t.TempDir(), time.Now, SyncAlways, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name  string
		write func() error
	}{
		{name: "put", write: func() error { return f.Put(ctx, "r", "a", []byte("v"), hour) }},
		{name: "delete", write: func() error { _, err := f.Delete(ctx, "r", "a"); return err }},
		{name: "add", write: func() error { return f.Add(ctx, "u", "h", map[string]int64{"n": 1}, time.Hour) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := f.size
			assert.ErrorIs(t, tt.write(), context.Canceled)
			assert.Zero(t, f.written.Load())
			fi, err := os.Stat(f.Path())
			require.NoError(t, err)
			assert.Equal(t, size, fi.Size())
			assert.Equal(t, stateDump{Tables: map[string][]dumpEntry{}, Bytes: map[string]int64{}, Counters: map[string]map[string]dumpCounters{}}, f.dump())
		})
	}
}

// TestFileFailedAppend makes the log's descriptor refuse writes: the
// write fails and is not applied, Ping reports it, and the store
// recovers once the log takes writes again.
func TestFileFailedAppend(t *testing.T) {
	dir := t.TempDir()
	f := openTestFile(t, dir, time.Now, SyncSecond, nil)
	require.NoError(t, f.Put(t.Context(), "r", "a", []byte("1"), hour))
	ro, err := os.Open(f.Path())
	require.NoError(t, err)
	f.mu.Lock()
	good := f.file
	f.file = ro
	f.mu.Unlock()
	require.Error(t, f.Put(t.Context(), "r", "b", []byte("2"), hour))
	_, err = f.Delete(t.Context(), "r", "a")
	require.Error(t, err)
	require.Error(t, f.Add(t.Context(), "u", "h", map[string]int64{"n": 1}, time.Hour))
	assert.ErrorContains(t, f.Ping(t.Context()), "appending to")
	_, err = f.Get(t.Context(), "r", "b")
	assert.ErrorIs(t, err, ErrNotFound, "a failed write is not applied")
	_, err = f.Get(t.Context(), "r", "a")
	assert.NoError(t, err, "a failed delete is not applied")
	c, err := f.Counters(t.Context(), "u", "h")
	require.NoError(t, err)
	assert.Empty(t, c)

	f.mu.Lock()
	f.file = good
	f.mu.Unlock()
	require.NoError(t, ro.Close())
	require.NoError(t, f.Put(t.Context(), "r", "c", []byte("3"), hour))
	assert.NoError(t, f.Ping(t.Context()))
	live := f.dump()
	require.NoError(t, f.Close())
	again := openTestFile(t, dir, time.Now, SyncSecond, nil)
	assert.Equal(t, live, again.dump())
}

// legacyFile writes a bbolt file laid out as the gateway's bbolt engine
// wrote it (see migrate.go): values in the order given, each table's
// sequence counting up from seq.
type legacyValue struct {
	table, key, value string
	expires           time.Time
}

type legacyCounters struct {
	table, key string
	values     map[string]int64
	expires    time.Time
}

func writeLegacy(t *testing.T, path string, values []legacyValue, counters []legacyCounters) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	stamp := func(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		for _, v := range values {
			tb, err := tx.CreateBucketIfNotExists([]byte("t:" + v.table))
			if err != nil {
				return err
			}
			vals, err := tb.CreateBucketIfNotExists(legacyValues)
			if err != nil {
				return err
			}
			idx, err := tb.CreateBucketIfNotExists(legacyIndex)
			if err != nil {
				return err
			}
			seq, err := tb.NextSequence()
			if err != nil {
				return err
			}
			rec := binary.BigEndian.AppendUint64(stamp(v.expires), seq)
			if err := vals.Put([]byte(v.key), append(rec, v.value...)); err != nil {
				return err
			}
			if err := idx.Put(append(rec[8:16:16], v.key...), nil); err != nil {
				return err
			}
			var total, count int64
			if b := tb.Get([]byte("bytes")); b != nil {
				total, count = int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(tb.Get([]byte("count"))))
			}
			if err := tb.Put([]byte("bytes"), binary.BigEndian.AppendUint64(nil, uint64(total+int64(len(v.value))))); err != nil {
				return err
			}
			if err := tb.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, uint64(count+1))); err != nil {
				return err
			}
		}
		for _, c := range counters {
			cb, err := tx.CreateBucketIfNotExists([]byte("c:" + c.table))
			if err != nil {
				return err
			}
			j, err := json.Marshal(c.values)
			if err != nil {
				return err
			}
			if err := cb.Put([]byte(c.key), append(stamp(c.expires), j...)); err != nil {
				return err
			}
		}
		return nil
	}))
}

func TestFileMigratesFromBbolt(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	now := c.now()
	dir := t.TempDir()
	legacy := filepath.Join(dir, legacyFileName)
	// Put in the order z, a, m: the index, not the keys, gives the order.
	writeLegacy(t, legacy, []legacyValue{
		{table: "responses", key: "z", value: "first", expires: now.Add(time.Hour)},
		{table: "responses", key: "gone", value: "expired", expires: now.Add(-time.Second)},
		{table: "responses", key: "a", value: "second", expires: now.Add(2 * time.Hour)},
		{table: "responses", key: "m", value: "third", expires: now.Add(time.Hour)},
		{table: "other", key: "k", value: "", expires: now.Add(time.Minute)},
	}, []legacyCounters{
		{table: "usage", key: "2026112611", values: map[string]int64{"k|openai|gpt|web|requests": 3, "in": 100}, expires: now.Add(90 * 24 * time.Hour)},
		{table: "usage", key: "old", values: map[string]int64{"n": 1}, expires: now.Add(-time.Hour)},
	})
	before, err := os.ReadFile(legacy)
	require.NoError(t, err)

	var logs bytes.Buffer
	f := openTestFile(t, dir, c.now, SyncSecond, &logs)
	at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	assert.Equal(t, stateDump{
		Tables: map[string][]dumpEntry{
			"responses": {{Key: "z", Value: "first", Expires: at(time.Hour)}, {Key: "a", Value: "second", Expires: at(2 * time.Hour)}, {Key: "m", Value: "third", Expires: at(time.Hour)}},
			"other":     {{Key: "k", Value: "", Expires: at(time.Minute)}},
		},
		Bytes:    map[string]int64{"responses": 16, "other": 0},
		Counters: map[string]map[string]dumpCounters{"usage": {"2026112611": {Values: map[string]int64{"k|openai|gpt|web|requests": 3, "in": 100}, Expires: at(90 * 24 * time.Hour)}}},
	}, f.dump())
	assert.NoFileExists(t, legacy)
	moved, err := os.ReadFile(legacy + ".migrated")
	require.NoError(t, err)
	assert.Equal(t, before, moved, "the bbolt file is kept as it was")
	assert.Contains(t, logs.String(), `"level":"INFO","msg":"state: imported the bbolt state file into the log"`)
	assert.Contains(t, logs.String(), `"values":4`)
	assert.Equal(t, 1, strings.Count(logs.String(), "\n"), "one line")

	// The log holds it, synced (the import is written then): reopened,
	// the same state; eviction takes the oldest of the bbolt order.
	require.NoError(t, f.Put(t.Context(), "responses", "new", []byte("x"), Limits{TTL: time.Hour, Max: 3}))
	require.NoError(t, f.Close())
	logs.Reset()
	again := openTestFile(t, dir, c.now, SyncSecond, &logs)
	_, err = again.Get(t.Context(), "responses", "z")
	assert.ErrorIs(t, err, ErrNotFound, "the oldest was evicted")
	for _, k := range []string{"a", "m", "new"} {
		_, err = again.Get(t.Context(), "responses", k)
		assert.NoError(t, err, k)
	}
	assert.Empty(t, logs.String(), "no second import")
}

func TestFileMigrationWaitsForTheBboltHolder(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, legacyFileName)
	writeLegacy(t, legacy, []legacyValue{{table: "r", key: "a", value: "v", expires: time.Now().Add(time.Hour)}}, nil)
	db, err := bolt.Open(legacy, 0o600, nil) // an older gateway, running
	require.NoError(t, err)
	_, err = openTestFileErr(t, dir, time.Now, SyncSecond, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), legacyFileName+" is held by another gateway process")
	require.NoError(t, db.Close())
	assert.FileExists(t, legacy, "left alone")

	// Once it is gone, the next start imports (the empty log left by the
	// failed one is no obstacle).
	f := openTestFile(t, dir, time.Now, SyncSecond, nil)
	got, err := f.Get(t.Context(), "r", "a")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
}

// BenchmarkFilePut puts 2 KB values with one writer and with many, in
// both sync modes; syncs/op is below 1 when writes share syncs.
func BenchmarkFilePut(b *testing.B) {
	value := make([]byte, 2048)
	lim := Limits{TTL: time.Hour, Max: 10000}
	for _, mode := range []string{SyncSecond, SyncAlways} {
		for _, writers := range []int{1, 64} {
			b.Run(fmt.Sprintf("sync=%s/writers=%d", mode, writers), func(b *testing.B) {
				f := openTestFile(b, b.TempDir(), time.Now, mode, nil)
				syncs := f.syncs.Load()
				var n atomic.Int64
				b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.ReportAllocs()
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
				b.ReportMetric(float64(f.syncs.Load()-syncs)/float64(b.N), "syncs/op")
				b.ReportMetric(float64(f.compactions.Load())/float64(b.N), "compactions/op")
			})
		}
	}
}

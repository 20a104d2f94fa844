package state

// The bbolt engine of the gateways before the log (the tree at 6d3d2ba),
// kept for BenchmarkBoltVersusLog only: its group commit as it was, and
// with NoSync and a sync a second after a write.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	bolt "go.etcd.io/bbolt"
)

// boltStore is the default engine: one bbolt file, cursor2api.db, in
// STATE_DIR. One process holds the file at a time.
//
// A write returns only once the transaction that holds it is committed
// and synced to disk, so a process killed mid-write leaves the file as of
// its last committed write. Writes commit as a group: bbolt has one
// writer and every commit pays an fsync, so a goroutine of boltStore's own
// runs the writes, and those that arrive while it commits go together
// into its next transaction, one commit and one fsync for all of them. A
// lone write commits at once; nothing waits for company. The writes of a
// group run in the order they arrived, each seeing those before it, so
// the group leaves the file as the same writes one by one would. Each
// keeps its own result: when one fails, the transaction is rolled back,
// the writes before it commit together again, it runs on its own and
// gets its own error, and the rest go on as a group.
//
// A write whose context ends while it waits in the queue returns the
// context's error and is never applied. Once taken into a transaction it
// is no longer cancelled: it returns what its commit returns, because by
// then it may be on disk. Close waits for the writes already queued, then
// closes the file; writes after it get ErrClosed. Reads are bbolt read
// transactions and run beside the writer.
type boltStore struct {
	db  *bolt.DB
	now func() time.Time

	mu        sync.Mutex
	lastSweep time.Time

	wmu     sync.Mutex
	queue   []*boltOp     // waiting for the writer, in order of arrival
	closed  bool          // Close has begun: no more writes queued
	wake    chan struct{} // one pending signal: the queue has writes
	stopped chan struct{} // closed when the writer has ended
	commits atomic.Int64  // transactions the writer committed

	noSync     bool
	pending    atomic.Bool
	kick, stop chan struct{}
	syncerDone chan struct{}
	syncs      atomic.Int64
}

// A boltOp is one write waiting for the writer. Its fn may run more
// than once, in transactions rolled back before the one that commits,
// so it keeps nothing across runs but what its transaction holds.
type boltOp struct {
	fn    func(*bolt.Tx) error
	stage atomic.Int32 // boltQueued, then boltTaken by the writer or boltCancelled by the caller
	err   error        // set before done is closed
	done  chan struct{}
}

const (
	boltQueued int32 = iota
	boltTaken
	boltCancelled
)

// write runs fn in a transaction of the writer and returns once it is
// committed and synced, or ctx ends before the writer takes it.
func (f *boltStore) write(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &boltOp{fn: fn, done: make(chan struct{})}
	f.wmu.Lock()
	if f.closed {
		f.wmu.Unlock()
		return ErrClosed
	}
	f.queue = append(f.queue, op)
	f.wmu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // a signal is pending already: the writer will see this op
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		if op.stage.CompareAndSwap(boltQueued, boltCancelled) {
			return ctx.Err()
		}
		// Taken already: its transaction is under way, and ends.
		<-op.done
		return op.err
	}
}

// writer runs the queued writes until Close, and then those still
// queued.
func (f *boltStore) writer() {
	defer close(f.stopped)
	for range f.wake {
		f.wmu.Lock()
		queued, closed := f.queue, f.closed
		f.queue = nil
		f.wmu.Unlock()
		group := queued[:0]
		for _, op := range queued {
			if op.stage.CompareAndSwap(boltQueued, boltTaken) {
				group = append(group, op)
			}
		}
		f.commit(group)
		if closed {
			// Nothing is queued after Close's flag, which this pass
			// saw: it took the last writes.
			return
		}
	}
}

// commit runs ops in one transaction, in order, and gives each its
// result: when one fails, those before it commit without it and it runs
// on its own, so it fails no other.
func (f *boltStore) commit(ops []*boltOp) {
	for len(ops) > 0 {
		failed := -1
		err := f.db.Update(func(tx *bolt.Tx) error {
			for i, op := range ops {
				if err := op.run(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		switch {
		case err == nil:
			f.commits.Add(1)
			if f.noSync && !f.pending.Swap(true) {
				select {
				case f.kick <- struct{}{}:
				default:
				}
			}
			boltFinish(ops, nil)
			return
		case failed == 0:
			// It ran first, on the file as last committed: its own result.
			boltFinish(ops[:1], err)
			ops = ops[1:]
		case failed > 0:
			f.commit(ops[:failed])
			ops = ops[failed:]
		default:
			// The transaction failed outside every op (its begin or
			// commit): each tries on its own.
			if len(ops) == 1 {
				boltFinish(ops, err)
				return
			}
			for _, op := range ops {
				f.commit([]*boltOp{op})
			}
			return
		}
	}
}

// run runs the op's fn; a panic (a record the file should not hold)
// fails this write alone instead of the writer, and so the process.
func (op *boltOp) run(tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("state: a write failed: %v", r)
		}
	}()
	return op.fn(tx)
}

func boltFinish(ops []*boltOp, err error) {
	for _, op := range ops {
		op.err = err
		close(op.done)
	}
}

// Within a table's bucket: values by key, the index of values in the
// order they were put, the total size and the count.
var (
	boltValuesBucket = []byte("v")
	boltIndexBucket  = []byte("i")
	boltBytesKey     = []byte("bytes")
	boltCountKey     = []byte("count")
)

func boltMeta(b *bolt.Bucket, key []byte) int64 {
	if v := b.Get(key); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func boltPutMeta(b *bolt.Bucket, total, count int64) error {
	if err := b.Put(boltBytesKey, binary.BigEndian.AppendUint64(nil, uint64(total))); err != nil {
		return err
	}
	return b.Put(boltCountKey, binary.BigEndian.AppendUint64(nil, uint64(count)))
}

// boltSweepEvery is how often expired counters are dropped.
const boltSweepEvery = 10 * time.Minute

func openBolt(path string, now func() time.Time, noSync bool) (*boltStore, error) {
	// Tuned as etcd runs it: no freelist written per commit, the map
	// freelist, a mapping large enough not to grow during the run.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, NoSync: noSync,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType, InitialMmapSize: 1 << 30})
	if err != nil {
		return nil, err
	}
	f := &boltStore{db: db, now: now, noSync: noSync, wake: make(chan struct{}, 1), stopped: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), syncerDone: make(chan struct{})}
	f.lastSweep = now()
	if err := db.Update(boltSweepTx(f.lastSweep)); err != nil {
		_ = db.Close()
		return nil, err
	}
	go f.writer()
	if noSync {
		go f.syncer()
	} else {
		close(f.syncerDone)
	}
	return f, nil
}

// syncer is the counterpart of the log's SyncSecond: with NoSync, the
// file is synced a second after the first commit since the last sync.
func (f *boltStore) syncer() {
	defer close(f.syncerDone)
	for {
		select {
		case <-f.kick:
		case <-f.stop:
			return
		}
		t := time.NewTimer(syncEvery)
		select {
		case <-t.C:
		case <-f.stop:
			t.Stop()
			return
		}
		f.pending.Store(false)
		_ = f.db.Sync()
		f.syncs.Add(1)
	}
}

// Path is the file's path.

// Engine implements Store.
func (*boltStore) Engine() string { return "bbolt" }

// Ping implements Store.
func (f *boltStore) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.db.View(func(*bolt.Tx) error { return nil })
}

// Close implements Store. It waits for the writes already queued to
// commit; writes after it get ErrClosed.
func (f *boltStore) Close() error {
	f.wmu.Lock()
	first := !f.closed
	f.closed = true
	f.wmu.Unlock()
	if first {
		// A signal sent or pending after the flag makes the writer pass
		// once more, see it and end. (wake is never closed: a write
		// queued before the flag may still be signalling.)
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	<-f.stopped
	if first && f.noSync {
		close(f.stop)
	}
	<-f.syncerDone
	if f.noSync {
		_ = f.db.Sync()
	}
	return f.db.Close()
}

func boltValuesName(table string) []byte   { return []byte("t:" + table) }
func boltCountersName(table string) []byte { return []byte("c:" + table) }

func boltStamp(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

func boltUnstamp(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b))) }

// A value's record is its expiry, its sequence number (the order of
// the Puts of its table) and the value; the index is by sequence number,
// so its front is the oldest.
const boltRecHeader = 16

func boltIndexKey(rec, key []byte) []byte { return append(bytes.Clone(rec[8:16]), key...) }

// Put implements Store.
func (f *boltStore) Put(ctx context.Context, table, key string, value []byte, lim Limits) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := f.now()
	return f.write(ctx, func(tx *bolt.Tx) error {
		tb, err := tx.CreateBucketIfNotExists(boltValuesName(table))
		if err != nil {
			return err
		}
		vals, err := tb.CreateBucketIfNotExists(boltValuesBucket)
		if err != nil {
			return err
		}
		idx, err := tb.CreateBucketIfNotExists(boltIndexBucket)
		if err != nil {
			return err
		}
		total, count := boltMeta(tb, boltBytesKey), boltMeta(tb, boltCountKey)
		remove := func(k, rec []byte) error {
			total -= int64(len(rec) - boltRecHeader)
			count--
			if err := idx.Delete(boltIndexKey(rec, k)); err != nil {
				return err
			}
			return vals.Delete(k)
		}
		k := []byte(key)
		if old := vals.Get(k); old != nil {
			if err := remove(k, bytes.Clone(old)); err != nil {
				return err
			}
		}
		seq, err := tb.NextSequence()
		if err != nil {
			return err
		}
		rec := binary.BigEndian.AppendUint64(boltStamp(expiry(now, lim.TTL)), seq)
		if err := vals.Put(k, append(rec, value...)); err != nil {
			return err
		}
		if err := idx.Put(boltIndexKey(rec, k), nil); err != nil {
			return err
		}
		total += int64(len(value))
		count++
		c := idx.Cursor()
		for ik, _ := c.First(); ik != nil; ik, _ = c.First() {
			vk := bytes.Clone(ik[8:])
			old := vals.Get(vk)
			if old == nil { // an index entry without its value: drop it
				if err := idx.Delete(bytes.Clone(ik)); err != nil {
					return err
				}
				continue
			}
			within := (lim.Max <= 0 || count <= int64(lim.Max)) && (lim.MaxBytes <= 0 || total <= lim.MaxBytes)
			if now.Before(boltUnstamp(old[:8])) && within {
				break
			}
			if err := remove(vk, bytes.Clone(old)); err != nil {
				return err
			}
		}
		return boltPutMeta(tb, total, count)
	})
}

// Get implements Store.
func (f *boltStore) Get(ctx context.Context, table, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := f.db.View(func(tx *bolt.Tx) error {
		tb := tx.Bucket(boltValuesName(table))
		if tb == nil {
			return ErrNotFound
		}
		vals := tb.Bucket(boltValuesBucket)
		if vals == nil {
			return ErrNotFound
		}
		rec := vals.Get([]byte(key))
		if rec == nil || !f.now().Before(boltUnstamp(rec[:8])) {
			return ErrNotFound
		}
		out = bytes.Clone(rec[boltRecHeader:])
		return nil
	})
	return out, err
}

// Delete implements Store.
func (f *boltStore) Delete(ctx context.Context, table, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var kept bool
	err := f.write(ctx, func(tx *bolt.Tx) error {
		kept = false // as of this run: a rolled-back one may have found the key
		tb := tx.Bucket(boltValuesName(table))
		if tb == nil {
			return nil
		}
		vals, idx := tb.Bucket(boltValuesBucket), tb.Bucket(boltIndexBucket)
		if vals == nil || idx == nil {
			return nil
		}
		k := []byte(key)
		rec := vals.Get(k)
		if rec == nil {
			return nil
		}
		rec = bytes.Clone(rec)
		kept = f.now().Before(boltUnstamp(rec[:8]))
		if err := idx.Delete(boltIndexKey(rec, k)); err != nil {
			return err
		}
		if err := vals.Delete(k); err != nil {
			return err
		}
		return boltPutMeta(tb, boltMeta(tb, boltBytesKey)-int64(len(rec)-boltRecHeader), boltMeta(tb, boltCountKey)-1)
	})
	return kept, err
}

// Add implements Store.
func (f *boltStore) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := f.now()
	err := f.write(ctx, func(tx *bolt.Tx) error {
		cb, err := tx.CreateBucketIfNotExists(boltCountersName(table))
		if err != nil {
			return err
		}
		values := map[string]int64{}
		k := []byte(key)
		if rec := cb.Get(k); rec != nil && now.Before(boltUnstamp(rec[:8])) {
			if err := json.Unmarshal(rec[8:], &values); err != nil {
				return fmt.Errorf("counters %s/%s: %w", table, key, err)
			}
		}
		for f, n := range add {
			values[f] += n
		}
		b, err := json.Marshal(values)
		if err != nil {
			return err
		}
		return cb.Put(k, append(boltStamp(expiry(now, ttl)), b...))
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	due := now.Sub(f.lastSweep) >= boltSweepEvery
	if due {
		f.lastSweep = now
	}
	f.mu.Unlock()
	if due {
		return f.write(ctx, boltSweepTx(now))
	}
	return nil
}

// Counters implements Store.
func (f *boltStore) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	values := map[string]int64{}
	err := f.db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket(boltCountersName(table))
		if cb == nil {
			return nil
		}
		rec := cb.Get([]byte(key))
		if rec == nil || !f.now().Before(boltUnstamp(rec[:8])) {
			return nil
		}
		return json.Unmarshal(rec[8:], &values)
	})
	return values, err
}

// boltSweepTx drops the counters of every table expired at now.
func boltSweepTx(now time.Time) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if !bytes.HasPrefix(name, []byte("c:")) {
				return nil
			}
			var expired [][]byte
			if err := b.ForEach(func(k, v []byte) error {
				if len(v) < 8 || !now.Before(boltUnstamp(v[:8])) {
					expired = append(expired, bytes.Clone(k))
				}
				return nil
			}); err != nil {
				return err
			}
			for _, k := range expired {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// BenchmarkBoltVersusLog measures the bbolt engine against the log on
// what the Responses store does per request: Put a 5 KB response under a
// new id (within the default limits, so that past the first 1000 every
// Put evicts one), then Get it back, by 1 and by 64 clients. Each engine
// in both durabilities: the log with STATE_SYNC=second against bbolt with
// NoSync and a sync a second after a commit; the log with
// STATE_SYNC=always against bbolt's commit with its fsyncs (the writes
// that wait together share one transaction, as DB.Batch does, without
// its 10 ms wait for company). p50 and p99 are of one Put and Get.
func BenchmarkBoltVersusLog(b *testing.B) {
	value := bytes.Repeat([]byte(`{"x":1}`), 5000/7)
	lim := Limits{TTL: time.Hour, Max: 1000, MaxBytes: 256 << 20}
	engines := []struct {
		name string
		open func(b *testing.B) Store
	}{
		{name: "log,second", open: func(b *testing.B) Store {
			s, err := Open(b.Context(), Options{Dir: b.TempDir(), Sync: SyncSecond})
			require.NoError(b, err)
			return s
		}},
		{name: "bbolt,nosync+sync-per-second", open: func(b *testing.B) Store {
			s, err := openBolt(filepath.Join(b.TempDir(), "bench.db"), time.Now, true)
			require.NoError(b, err)
			return s
		}},
		{name: "log,always", open: func(b *testing.B) Store {
			s, err := Open(b.Context(), Options{Dir: b.TempDir(), Sync: SyncAlways})
			require.NoError(b, err)
			return s
		}},
		{name: "bbolt,group-commit+fsync", open: func(b *testing.B) Store {
			s, err := openBolt(filepath.Join(b.TempDir(), "bench.db"), time.Now, false)
			require.NoError(b, err)
			return s
		}},
	}
	for _, e := range engines {
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", e.name, clients), func(b *testing.B) {
				s := e.open(b)
				defer s.Close()
				ctx := context.Background()
				var (
					id      atomic.Int64
					evicted atomic.Int64
					mu      sync.Mutex
					all     []time.Duration
				)
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.ReportAllocs()
				b.ResetTimer()
				work := func(pb interface{ Next() bool }) {
					var took []time.Duration
					for pb.Next() {
						key := "resp_" + strconv.FormatInt(id.Add(1), 10)
						start := time.Now()
						if err := s.Put(ctx, "responses", key, value, lim); err != nil {
							b.Error(err)
							return
						}
						// Under load a client can sleep between its Put and
						// its Get while others put 1000 more: counted, not failed.
						if _, err := s.Get(ctx, "responses", key); errors.Is(err, ErrNotFound) {
							evicted.Add(1)
						} else if err != nil {
							b.Error(err)
							return
						}
						took = append(took, time.Since(start))
					}
					mu.Lock()
					all = append(all, took...)
					mu.Unlock()
				}
				if clients == 1 {
					work(&loop{n: b.N})
				} else {
					b.RunParallel(func(pb *testing.PB) { work(pb) })
				}
				b.StopTimer()
				b.ReportMetric(float64(evicted.Load())/float64(b.N), "evicted/op")
				if f, ok := s.(*File); ok {
					b.ReportMetric(float64(f.compactions.Load()), "compactions")
				}
				slices.Sort(all)
				if len(all) > 0 {
					b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
				}
			})
		}
	}
}

// loop is a testing.PB for one client: b.N iterations.
type loop struct{ n int }

func (l *loop) Next() bool { l.n--; return l.n >= 0 }

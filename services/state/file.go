package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// File is the default engine: one bbolt file, cursor2api.db, in
// STATE_DIR. One process holds the file at a time.
//
// A write returns only once the transaction that holds it is committed
// and synced to disk, so a process killed mid-write leaves the file as of
// its last committed write. Writes commit as a group: bbolt has one
// writer and every commit pays an fsync, so a goroutine of File's own
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
type File struct {
	db  *bolt.DB
	now func() time.Time

	mu        sync.Mutex
	lastSweep time.Time

	wmu     sync.Mutex
	queue   []*writeOp    // waiting for the writer, in order of arrival
	closed  bool          // Close has begun: no more writes queued
	wake    chan struct{} // one pending signal: the queue has writes
	stopped chan struct{} // closed when the writer has ended
	commits atomic.Int64  // transactions the writer committed
}

// ErrClosed is the error of a write to a File after its Close.
var ErrClosed = errors.New("state: the state file is closed (the gateway is shutting down)")

// A writeOp is one write waiting for the writer. Its fn may run more
// than once, in transactions rolled back before the one that commits,
// so it keeps nothing across runs but what its transaction holds.
type writeOp struct {
	fn    func(*bolt.Tx) error
	stage atomic.Int32 // opQueued, then opTaken by the writer or opCancelled by the caller
	err   error        // set before done is closed
	done  chan struct{}
}

const (
	opQueued int32 = iota
	opTaken
	opCancelled
)

// write runs fn in a transaction of the writer and returns once it is
// committed and synced, or ctx ends before the writer takes it.
func (f *File) write(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &writeOp{fn: fn, done: make(chan struct{})}
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
		if op.stage.CompareAndSwap(opQueued, opCancelled) {
			return ctx.Err()
		}
		// Taken already: its transaction is under way, and ends.
		<-op.done
		return op.err
	}
}

// writer runs the queued writes until Close, and then those still
// queued.
func (f *File) writer() {
	defer close(f.stopped)
	for range f.wake {
		f.wmu.Lock()
		queued, closed := f.queue, f.closed
		f.queue = nil
		f.wmu.Unlock()
		group := queued[:0]
		for _, op := range queued {
			if op.stage.CompareAndSwap(opQueued, opTaken) {
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
func (f *File) commit(ops []*writeOp) {
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
			finish(ops, nil)
			return
		case failed == 0:
			// It ran first, on the file as last committed: its own result.
			finish(ops[:1], err)
			ops = ops[1:]
		case failed > 0:
			f.commit(ops[:failed])
			ops = ops[failed:]
		default:
			// The transaction failed outside every op (its begin or
			// commit): each tries on its own.
			if len(ops) == 1 {
				finish(ops, err)
				return
			}
			for _, op := range ops {
				f.commit([]*writeOp{op})
			}
			return
		}
	}
}

// run runs the op's fn; a panic (a record the file should not hold)
// fails this write alone instead of the writer, and so the process.
func (op *writeOp) run(tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("state: a write failed: %v", r)
		}
	}()
	return op.fn(tx)
}

func finish(ops []*writeOp, err error) {
	for _, op := range ops {
		op.err = err
		close(op.done)
	}
}

// Within a table's bucket: values by key, the index of values in the
// order they were put, the total size and the count.
var (
	valuesBucket = []byte("v")
	indexBucket  = []byte("i")
	bytesKey     = []byte("bytes")
	countKey     = []byte("count")
)

func meta(b *bolt.Bucket, key []byte) int64 {
	if v := b.Get(key); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func putMeta(b *bolt.Bucket, total, count int64) error {
	if err := b.Put(bytesKey, binary.BigEndian.AppendUint64(nil, uint64(total))); err != nil {
		return err
	}
	return b.Put(countKey, binary.BigEndian.AppendUint64(nil, uint64(count)))
}

// lockTimeout bounds the wait for a file another process holds.
const lockTimeout = 2 * time.Second

// sweepEvery is how often expired counters are dropped.
const sweepEvery = 10 * time.Minute

func openFile(dir string, now func() time.Time) (*File, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("STATE_DIR is not set and its default %s cannot be created (%w): set STATE_DIR to a writable directory, or STATE_URL=memory: to keep no state", d, err)
		}
		dir = d
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("STATE_DIR=%s does not exist: create it (the gateway keeps its state in %s there), or set STATE_URL=memory: to keep no state", dir, FileName)
	case err != nil:
		return nil, fmt.Errorf("STATE_DIR=%s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("STATE_DIR=%s is not a directory: point it at a writable directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return nil, fmt.Errorf("STATE_DIR=%s is not writable (%w): give the gateway's user write access, mount a volume there, or set STATE_URL=memory: to keep no state", dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("STATE_DIR=%s: %s is held by another gateway process; give each process its own STATE_DIR, or share state between replicas with STATE_URL=redis://…", dir, FileName)
	}
	if err != nil {
		return nil, fmt.Errorf("STATE_DIR=%s: opening %s: %w", dir, FileName, err)
	}
	f := &File{db: db, now: now, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	f.lastSweep = now()
	if err := db.Update(sweepTx(f.lastSweep)); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("STATE_DIR=%s: %w", dir, err)
	}
	go f.writer()
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.db.Path() }

// Engine implements Store.
func (*File) Engine() string { return "file" }

// Ping implements Store.
func (f *File) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.db.View(func(*bolt.Tx) error { return nil })
}

// Close implements Store. It waits for the writes already queued to
// commit; writes after it get ErrClosed.
func (f *File) Close() error {
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
	return f.db.Close()
}

func valuesName(table string) []byte   { return []byte("t:" + table) }
func countersName(table string) []byte { return []byte("c:" + table) }

func stamp(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }

func unstamp(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b))) }

// A value's record is its expiry, its sequence number (the order of
// the Puts of its table) and the value; the index is by sequence number,
// so its front is the oldest.
const recHeader = 16

func indexKey(rec, key []byte) []byte { return append(bytes.Clone(rec[8:16]), key...) }

// Put implements Store.
func (f *File) Put(ctx context.Context, table, key string, value []byte, lim Limits) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := f.now()
	return f.write(ctx, func(tx *bolt.Tx) error {
		tb, err := tx.CreateBucketIfNotExists(valuesName(table))
		if err != nil {
			return err
		}
		vals, err := tb.CreateBucketIfNotExists(valuesBucket)
		if err != nil {
			return err
		}
		idx, err := tb.CreateBucketIfNotExists(indexBucket)
		if err != nil {
			return err
		}
		total, count := meta(tb, bytesKey), meta(tb, countKey)
		remove := func(k, rec []byte) error {
			total -= int64(len(rec) - recHeader)
			count--
			if err := idx.Delete(indexKey(rec, k)); err != nil {
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
		rec := binary.BigEndian.AppendUint64(stamp(expiry(now, lim.TTL)), seq)
		if err := vals.Put(k, append(rec, value...)); err != nil {
			return err
		}
		if err := idx.Put(indexKey(rec, k), nil); err != nil {
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
			if now.Before(unstamp(old[:8])) && within {
				break
			}
			if err := remove(vk, bytes.Clone(old)); err != nil {
				return err
			}
		}
		return putMeta(tb, total, count)
	})
}

// Get implements Store.
func (f *File) Get(ctx context.Context, table, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := f.db.View(func(tx *bolt.Tx) error {
		tb := tx.Bucket(valuesName(table))
		if tb == nil {
			return ErrNotFound
		}
		vals := tb.Bucket(valuesBucket)
		if vals == nil {
			return ErrNotFound
		}
		rec := vals.Get([]byte(key))
		if rec == nil || !f.now().Before(unstamp(rec[:8])) {
			return ErrNotFound
		}
		out = bytes.Clone(rec[recHeader:])
		return nil
	})
	return out, err
}

// Delete implements Store.
func (f *File) Delete(ctx context.Context, table, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var kept bool
	err := f.write(ctx, func(tx *bolt.Tx) error {
		kept = false // as of this run: a rolled-back one may have found the key
		tb := tx.Bucket(valuesName(table))
		if tb == nil {
			return nil
		}
		vals, idx := tb.Bucket(valuesBucket), tb.Bucket(indexBucket)
		if vals == nil || idx == nil {
			return nil
		}
		k := []byte(key)
		rec := vals.Get(k)
		if rec == nil {
			return nil
		}
		rec = bytes.Clone(rec)
		kept = f.now().Before(unstamp(rec[:8]))
		if err := idx.Delete(indexKey(rec, k)); err != nil {
			return err
		}
		if err := vals.Delete(k); err != nil {
			return err
		}
		return putMeta(tb, meta(tb, bytesKey)-int64(len(rec)-recHeader), meta(tb, countKey)-1)
	})
	return kept, err
}

// Add implements Store.
func (f *File) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := f.now()
	err := f.write(ctx, func(tx *bolt.Tx) error {
		cb, err := tx.CreateBucketIfNotExists(countersName(table))
		if err != nil {
			return err
		}
		values := map[string]int64{}
		k := []byte(key)
		if rec := cb.Get(k); rec != nil && now.Before(unstamp(rec[:8])) {
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
		return cb.Put(k, append(stamp(expiry(now, ttl)), b...))
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	due := now.Sub(f.lastSweep) >= sweepEvery
	if due {
		f.lastSweep = now
	}
	f.mu.Unlock()
	if due {
		return f.write(ctx, sweepTx(now))
	}
	return nil
}

// Counters implements Store.
func (f *File) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	values := map[string]int64{}
	err := f.db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket(countersName(table))
		if cb == nil {
			return nil
		}
		rec := cb.Get([]byte(key))
		if rec == nil || !f.now().Before(unstamp(rec[:8])) {
			return nil
		}
		return json.Unmarshal(rec[8:], &values)
	})
	return values, err
}

// sweepTx drops the counters of every table expired at now.
func sweepTx(now time.Time) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if !bytes.HasPrefix(name, []byte("c:")) {
				return nil
			}
			var expired [][]byte
			if err := b.ForEach(func(k, v []byte) error {
				if len(v) < 8 || !now.Before(unstamp(v[:8])) {
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

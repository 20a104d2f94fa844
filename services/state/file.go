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
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// File is the default engine: one bbolt file, cursor2api.db, in
// STATE_DIR. Every write is a transaction synced to disk before it
// returns, so a process killed mid-write leaves the file as of its last
// committed write. One process holds the file at a time.
type File struct {
	db  *bolt.DB
	now func() time.Time

	mu        sync.Mutex
	lastSweep time.Time
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
	f := &File{db: db, now: now}
	if err := f.sweep(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("STATE_DIR=%s: %w", dir, err)
	}
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

// Close implements Store.
func (f *File) Close() error { return f.db.Close() }

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
	return f.db.Update(func(tx *bolt.Tx) error {
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
	kept := false
	err := f.db.Update(func(tx *bolt.Tx) error {
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
	err := f.db.Update(func(tx *bolt.Tx) error {
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
	f.mu.Unlock()
	if due {
		return f.sweep()
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

// sweep drops the expired counters of every table.
func (f *File) sweep() error {
	now := f.now()
	f.mu.Lock()
	f.lastSweep = now
	f.mu.Unlock()
	return f.db.Update(func(tx *bolt.Tx) error {
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
	})
}

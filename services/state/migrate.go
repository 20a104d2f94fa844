package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// legacyFileName is the bbolt file of the gateways before the log,
// imported once by migrate.
const legacyFileName = "cursor2api.db"

// The bbolt file's layout: a bucket "t:<table>" per table of values,
// holding "v" (records by key: expiry and sequence, 8 bytes each
// big-endian, then the value) and "i" (the index: sequence and key, in
// the order of the Puts); a bucket "c:<table>" per table of counters
// (records by key: expiry, then the counters as a JSON object).
var (
	legacyValues = []byte("v")
	legacyIndex  = []byte("i")
)

// migrate imports the bbolt file at legacy into the live state and
// writes it as the log's first snapshot, synced, in place of the empty
// log f holds; then renames the bbolt file to cursor2api.db.migrated
// (kept: it is the user's data).
func (f *File) migrate(legacy string) error {
	now := f.now().Round(0)
	db, err := bolt.Open(legacy, 0o600, &bolt.Options{Timeout: lockTimeout, ReadOnly: true})
	if errors.Is(err, berrors.ErrTimeout) {
		return heldError(f.dir, legacyFileName)
	}
	if err != nil {
		return fmt.Errorf("STATE_DIR=%s: opening %s to import it: %w", f.dir, legacyFileName, err)
	}
	values, counters := 0, 0
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			switch {
			case bytes.HasPrefix(name, []byte("t:")):
				n, err := importValues(&f.state, string(name[2:]), b, now)
				values += n
				return err
			case bytes.HasPrefix(name, []byte("c:")):
				n, err := importCounters(&f.state, string(name[2:]), b, now)
				counters += n
				return err
			}
			return nil
		})
	})
	_ = db.Close()
	if err != nil {
		return fmt.Errorf("STATE_DIR=%s: importing %s: %w", f.dir, legacyFileName, err)
	}
	tmp := f.path + ".tmp"
	out, size, err := f.writeSnapshot(tmp, now)
	if err == nil {
		err = f.install(out, tmp)
	}
	if err != nil {
		return fmt.Errorf("STATE_DIR=%s: writing the imported state: %w", f.dir, err)
	}
	f.size, f.checkAt = size, 2*size+f.slack
	moved := legacy + ".migrated"
	if err := os.Rename(legacy, moved); err != nil {
		// The log is there and is read from now on; the old file stays.
		f.logger.Warn("state: imported the bbolt state file but could not rename it", "file", legacy, "error", err)
		return nil
	}
	_ = syncDir(filepath.Dir(legacy))
	f.logger.Info("state: imported the bbolt state file into the log", "from", legacy, "to", f.path, "values", values, "counters", counters, "kept_as", moved)
	return nil
}

func importValues(s *memState, table string, b *bolt.Bucket, now time.Time) (int, error) {
	vals, idx := b.Bucket(legacyValues), b.Bucket(legacyIndex)
	if vals == nil || idx == nil {
		return 0, nil
	}
	n := 0
	c := idx.Cursor()
	for ik, _ := c.First(); ik != nil; ik, _ = c.Next() {
		if len(ik) < 8 {
			continue
		}
		key := ik[8:]
		rec := vals.Get(key)
		if len(rec) < 16 {
			continue // an index entry without its value
		}
		expires := time.Unix(0, int64(binary.BigEndian.Uint64(rec[:8])))
		if !now.Before(expires) {
			continue
		}
		s.table(table).set(string(key), rec[16:], expires)
		n++
	}
	return n, nil
}

func importCounters(s *memState, table string, b *bolt.Bucket, now time.Time) (int, error) {
	n := 0
	err := b.ForEach(func(k, v []byte) error {
		if len(v) < 8 {
			return nil
		}
		expires := time.Unix(0, int64(binary.BigEndian.Uint64(v[:8])))
		if !now.Before(expires) {
			return nil
		}
		values := map[string]int64{}
		if err := json.Unmarshal(v[8:], &values); err != nil {
			return fmt.Errorf("counters %s/%s: %w", table, k, err)
		}
		s.setCounters(table, string(k), values, expires)
		n++
		return nil
	})
	return n, err
}

package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillLog writes a log of some sixty records in dir on the clock c, puts,
// adds and deletes in turn, the last one an add; compacted, it holds the
// snapshot's records instead. It returns the log's bytes.
func fillLog(t *testing.T, dir string, c *clock, compacted bool) []byte {
	t.Helper()
	f := openTestFile(t, dir, c.now, SyncSecond, nil)
	ctx := t.Context()
	for i := range 24 {
		value := fmt.Sprintf("value %d %s", i, strings.Repeat("x", i*37))
		require.NoError(t, f.Put(ctx, "r", fmt.Sprintf("k%d", i), []byte(value), hour))
		if i%5 == 4 {
			_, err := f.Delete(ctx, "r", fmt.Sprintf("k%d", i-2))
			require.NoError(t, err)
		}
		require.NoError(t, f.Add(ctx, "u", fmt.Sprintf("h%d", i%3), map[string]int64{"n": 1, "b": int64(i)}, time.Hour))
	}
	if compacted {
		f.mu.Lock()
		require.NoError(t, f.compact(c.now()))
		f.mu.Unlock()
	}
	require.NoError(t, f.Close())
	b, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	return b
}

// stateWithout is the state a log replays to without its records at the
// indexes drop: what is left when exactly those records are lost.
func stateWithout(t *testing.T, log []byte, c *clock, drop ...int) stateDump {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, log, 0o600))
	offs, lens := records(t, path)
	kept := slices.Clone(log[:headerLen])
	for i, off := range offs {
		if !slices.Contains(drop, i) {
			kept = append(kept, log[off:off+lens[i]]...)
		}
	}
	require.NoError(t, os.WriteFile(path, kept, 0o600))
	f := openTestFile(t, dir, c.now, SyncSecond, nil)
	defer f.Close()
	return f.dump()
}

// TestFileDamageInTheMiddle damages a log where sound records follow the
// damage: the start loses the damaged records and no other, copies the
// log aside as it was, says so, and leaves a sound log.
func TestFileDamageInTheMiddle(t *testing.T) {
	tests := []struct {
		name      string
		compacted bool
		// damage damages the log b whose records are at offs, lens, and
		// returns the indexes of the records it damaged.
		damage func(b []byte, offs, lens []int64) ([]byte, []int)
	}{
		{name: "a bit flipped in a payload", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]+lens[i]/2] ^= 0x10
			return b, []int{i}
		}},
		{name: "a bit flipped in a CRC", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]+5] ^= 0x01
			return b, []int{i}
		}},
		{name: "a low bit flipped in a length", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]] ^= 0x01
			return b, []int{i}
		}},
		{name: "a high bit flipped in a length", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]+3] ^= 0x20
			return b, []int{i}
		}},
		{name: "the first record", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			b[offs[0]+lens[0]-1] ^= 0x80
			return b, []int{0}
		}},
		{name: "a block zeroed across records", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 3
			clear(b[offs[i]+3 : offs[i+3]+5])
			return b, []int{i, i + 1, i + 2, i + 3}
		}},
		{name: "two bits far apart", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i, j := len(offs)/4, 3*len(offs)/4
			b[offs[i]+lens[i]-2] ^= 0x04
			b[offs[j]+1] ^= 0x04
			return b, []int{i, j}
		}},
		{name: "a bit flipped and a torn tail", damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i, last := len(offs)/2, len(offs)-1
			b[offs[i]+lens[i]/2] ^= 0x10
			return b[:offs[last]+lens[last]-3], []int{i, last}
		}},
		{name: "a bit flipped in a snapshot", compacted: true, damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]+lens[i]/2] ^= 0x10
			return b, []int{i}
		}},
		{name: "a snapshot's length garbled", compacted: true, damage: func(b []byte, offs, lens []int64) ([]byte, []int) {
			i := len(offs) / 2
			b[offs[i]+2] ^= 0xff
			return b, []int{i}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1_800_000_000, 0)}
			dir := t.TempDir()
			sound := fillLog(t, dir, c, tt.compacted)
			path := filepath.Join(dir, FileName)
			offs, lens := records(t, path)
			require.Greater(t, len(offs), 20)
			damaged, lost := tt.damage(slices.Clone(sound), offs, lens)
			require.NoError(t, os.WriteFile(path, damaged, 0o600))
			want := stateWithout(t, sound, c, lost...)

			var logs bytes.Buffer
			f, err := openTestFileErr(t, dir, c.now, SyncSecond, &logs)
			require.NoError(t, err)
			assert.Equal(t, want, f.dump(), "every record but the damaged ones")
			if !tt.compacted {
				got, err := f.Get(t.Context(), "r", "k23")
				require.NoError(t, err, "the last put, long after the damage")
				assert.Contains(t, string(got), "value 23 ")
			}

			asides, err := filepath.Glob(path + ".damaged-*")
			require.NoError(t, err)
			require.Len(t, asides, 1, "the damaged log is kept aside")
			kept, err := os.ReadFile(asides[0])
			require.NoError(t, err)
			assert.Equal(t, damaged, kept, "as it was")
			assert.Equal(t, 1, strings.Count(logs.String(), "\n"), logs.String())
			assert.Contains(t, logs.String(), `"level":"ERROR"`)
			assert.Contains(t, logs.String(), `"file":"`+path+`"`)
			assert.Contains(t, logs.String(), `"kept_as":"`+asides[0]+`"`)

			// The log is sound again: it opens quietly to the same state,
			// and takes writes.
			require.NoError(t, f.Put(t.Context(), "r", "after", []byte("the repair"), hour))
			live := f.dump()
			require.NoError(t, f.Close())
			logs.Reset()
			again := openTestFile(t, dir, c.now, SyncSecond, &logs)
			assert.Equal(t, live, again.dump())
			assert.Empty(t, logs.String(), "a repaired log opens without warnings")
		})
	}
}

// TestFileTornAtEveryByte tears the last record at each of its bytes,
// cut short there or with the byte flipped: only that record is lost,
// the log is cut before it, and nothing is kept aside.
func TestFileTornAtEveryByte(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	sound := fillLog(t, t.TempDir(), c, false)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, sound, 0o600))
	offs, lens := records(t, path)
	last, n := offs[len(offs)-1], lens[len(lens)-1]
	want := stateWithout(t, sound, c, len(offs)-1)
	for at := last; at < last+n; at++ {
		for _, how := range []string{"cut", "flipped"} {
			if how == "cut" && at == last {
				continue // no tear: a sound log one record shorter
			}
			torn := slices.Clone(sound)
			if how == "cut" {
				torn = torn[:at]
			} else {
				torn[at] ^= 0xff
			}
			require.NoError(t, os.WriteFile(path, torn, 0o600))
			var logs bytes.Buffer
			f, err := openTestFileErr(t, dir, c.now, SyncSecond, &logs)
			require.NoError(t, err, "%s at byte %d", how, at)
			assert.Equal(t, want, f.dump(), "%s at byte %d", how, at)
			require.NoError(t, f.Close())
			assert.Contains(t, logs.String(), fmt.Sprintf(`"dropped_bytes":%d`, int64(len(torn))-last), "%s at byte %d", how, at)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, last, fi.Size(), "%s at byte %d: cut before the torn record", how, at)
			asides, err := filepath.Glob(path + ".damaged-*")
			require.NoError(t, err)
			assert.Empty(t, asides, "%s at byte %d: a torn tail is no damage to keep", how, at)
		}
	}
}

// TestFileDamageNotCopiedStopsTheStart: when the damaged log cannot be
// copied aside, the start stops with an error naming it, the log as it
// was.
func TestFileDamageNotCopiedStopsTheStart(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	dir := t.TempDir()
	log := fillLog(t, dir, c, false)
	path := filepath.Join(dir, FileName)
	offs, _ := records(t, path)
	log[offs[3]+10] ^= 0x01
	require.NoError(t, os.WriteFile(path, log, 0o600))
	// The copy's name taken by a directory.
	require.NoError(t, os.Mkdir(path+".damaged-"+c.now().UTC().Format("20060102T150405Z"), 0o700))

	_, err := openTestFileErr(t, dir, c.now, SyncSecond, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), fmt.Sprintf("damaged at byte %d", offs[3]))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, log, after, "the log is left as it was")
}

// FuzzReplay replays damaged logs: replay never panics, and what it
// reports lies within the log, in order.
func FuzzReplay(f *testing.F) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	dir := f.TempDir()
	var b []byte
	{
		s, err := Open(f.Context(), Options{Dir: dir, Now: c.now})
		require.NoError(f, err)
		for i := range 8 {
			require.NoError(f, s.Put(f.Context(), "r", fmt.Sprint(i), []byte(strings.Repeat("v", i*9)), hour))
			require.NoError(f, s.Add(f.Context(), "u", "h", map[string]int64{"n": int64(i)}, time.Hour))
		}
		require.NoError(f, s.Close())
		var err2 error
		b, err2 = os.ReadFile(filepath.Join(dir, FileName))
		require.NoError(f, err2)
	}
	body := b[headerLen:]
	f.Add(body, uint16(0), byte(0))
	f.Add(body, uint16(40), byte(1))
	f.Add(body, uint16(3), byte(0x80))
	f.Fuzz(func(t *testing.T, body []byte, at uint16, mask byte) {
		body = slices.Clone(body)
		if len(body) > 0 {
			body[int(at)%len(body)] ^= mask
		}
		s := newMemState()
		res, err := replay(bytes.NewReader(body), int64(len(body)), &s)
		if err != nil {
			return // a sound record that does not apply
		}
		assert.LessOrEqual(t, res.good, int64(len(body)))
		last := int64(0)
		for _, d := range res.damaged {
			assert.LessOrEqual(t, last, d.from)
			assert.Less(t, d.from, d.to)
			assert.Less(t, d.to, int64(len(body)))
			last = d.to
		}
	})
}

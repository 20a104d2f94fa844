package state

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// File is the default engine: the memory engine's state plus an append-only
// log of every write (cursor2api.log in STATE_DIR, like Redis's AOF),
// replayed at the next start. One process holds the log at a time.
//
// A write is one record, appended by one write(2) and then applied to
// memory, so a killed process loses no returned write; what a power cut can
// lose is STATE_SYNC's choice. A failed append is not applied and its
// partial record is cut off before the next write, so log and memory agree.
// A write checks ctx once, before it is logged; a logged SyncAlways write
// waits for its sync whatever ctx does.
//
// Past twice the live state plus compactSlack the log is compacted (see
// replay and salvage for damage). An earlier gateway's bbolt cursor2api.db
// is imported at the first open.
type File struct {
	path, dir string
	now       func() time.Time
	logger    *slog.Logger
	always    bool
	slack     int64                // compactSlack; tests lower it
	syncFile  func(*os.File) error // fdatasync; tests count or slow it

	mu      sync.Mutex // the live state and the log's end; held by each write
	state   memState
	file    *os.File // changed under mu and smu both
	buf     []byte   // the record being encoded
	size    int64    // the log's length as of its last sound record
	torn    bool     // a failed append may have left bytes past size
	checkAt int64    // a log past this size is considered for compaction
	werr    error    // the last append's error (nil after a good one)
	closed  bool

	written atomic.Int64 // records appended since open
	pending atomic.Bool  // SyncSecond: written since the syncer last synced
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	smu        sync.Mutex // the syncs
	scond      *sync.Cond // signalled when a sync ends
	syncing    bool
	synced     int64 // records a sync has covered
	failedUpTo int64 // records a failed sync was to cover
	syncErr    error // the last sync's error (nil after a good one)
	gone       bool  // Close has closed the file

	syncs       atomic.Int64 // fdatasyncs of the log
	compactions atomic.Int64
}

// STATE_SYNC's values. SyncSecond (the default) fdatasyncs at most a second
// after a write, as Redis's appendfsync everysec. SyncAlways returns once a
// sync covers the write; writes waiting together share one sync.
const (
	SyncSecond = "second"
	SyncAlways = "always"
)

// syncEvery is how long after a write SyncSecond syncs it.
const syncEvery = time.Second

// compactSlack is what the log may grow past twice the live state before
// it is compacted: a small state is not rewritten every few writes.
const compactSlack = 16 << 20

// lockTimeout bounds the wait for a log (or a bbolt file) another
// process holds.
const lockTimeout = 2 * time.Second

// ErrClosed is the error of a write to a File after its Close.
var ErrClosed = errors.New("state: the state file is closed (the gateway is shutting down)")

// fileOptions open a File.
type fileOptions struct {
	dir    string
	now    func() time.Time
	logger *slog.Logger
	sync   string
}

func heldError(dir, name string) error {
	return fmt.Errorf("STATE_DIR=%s: %s is held by another gateway process; give each process its own STATE_DIR, or share state between replicas with STATE_URL=redis://…", dir, name)
}

func openFile(opts fileOptions) (*File, error) {
	always := false
	switch opts.sync {
	case "", SyncSecond:
	case SyncAlways:
		always = true
	default:
		return nil, fmt.Errorf("STATE_SYNC=%q: use second (sync the state file every second) or always (sync before each write returns)", opts.sync)
	}
	dir, err := stateDir(opts.dir)
	if err != nil {
		return nil, err
	}
	f := &File{
		path: filepath.Join(dir, FileName), dir: dir, now: opts.now, logger: opts.logger, always: always,
		slack: compactSlack, syncFile: fdatasync,
		state: newMemState(), kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	f.scond = sync.NewCond(&f.smu)
	f.file, err = openLocked(f.path, dir)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.path + ".tmp") // a compaction's, cut short
	if err := f.load(); err != nil {
		_ = f.file.Close()
		return nil, err
	}
	if always {
		close(f.stopped)
	} else {
		go f.syncer()
	}
	return f, nil
}

// stateDir checks STATE_DIR (or makes its default): a writable
// directory.
func stateDir(dir string) (string, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("STATE_DIR is not set and its default %s cannot be created (%w): set STATE_DIR to a writable directory, or STATE_URL=memory: to keep no state", d, err)
		}
		dir = d
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("STATE_DIR=%s does not exist: create it (the gateway keeps its state in %s there), or set STATE_URL=memory: to keep no state", dir, FileName)
	case err != nil:
		return "", fmt.Errorf("STATE_DIR=%s: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("STATE_DIR=%s is not a directory: point it at a writable directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return "", fmt.Errorf("STATE_DIR=%s is not writable (%w): give the gateway's user write access, mount a volume there, or set STATE_URL=memory: to keep no state", dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return dir, nil
}

// openLocked opens (or creates) the log at path and locks it, waiting
// lockTimeout at most for another process to let go. A compaction
// renames a new file over the log: a lock taken on the file the path no
// longer names is let go and taken again.
func openLocked(path, dir string) (*os.File, error) {
	deadline := time.Now().Add(lockTimeout)
	for {
		file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("STATE_DIR=%s: opening %s: %w", dir, FileName, err)
		}
		err = lockFile(file)
		if err == nil {
			held, herr := file.Stat()
			named, nerr := os.Stat(path)
			if herr == nil && nerr == nil && os.SameFile(held, named) {
				return file, nil
			}
			_ = file.Close()
			continue
		}
		_ = file.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("STATE_DIR=%s: locking %s: %w", dir, FileName, err)
		}
		if time.Now().After(deadline) {
			return nil, heldError(dir, FileName)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// load reads the log into memory: an empty one is started (from the
// bbolt file of an earlier gateway when there is one), a torn tail cut
// off, a log damaged in the middle salvaged.
func (f *File) load() error {
	fi, err := f.file.Stat()
	if err != nil {
		return fmt.Errorf("STATE_DIR=%s: %w", f.dir, err)
	}
	if fi.Size() < int64(headerLen) {
		return f.start(fi.Size())
	}
	var header [headerLen]byte
	if _, err := f.file.ReadAt(header[:], 0); err != nil {
		return fmt.Errorf("STATE_DIR=%s: reading %s: %w", f.dir, FileName, err)
	}
	if string(header[:len(logMagic)]) != logMagic {
		return fmt.Errorf("STATE_DIR=%s: %s is not a cursor2api state log: move it away, or point STATE_DIR elsewhere", f.dir, FileName)
	}
	if v := binary.LittleEndian.Uint32(header[len(logMagic):]); v != logVersion {
		return fmt.Errorf("STATE_DIR=%s: %s is of version %d, which this gateway does not read (a newer gateway wrote it): run the newer gateway, or move the file away to start empty", f.dir, FileName, v)
	}
	body := io.NewSectionReader(f.file, int64(headerLen), fi.Size()-int64(headerLen))
	res, err := replay(body, body.Size(), &f.state)
	var unknown errUnknownKind
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("STATE_DIR=%s: %s has %w: run the newer gateway, or move the file away to start empty", f.dir, f.path, err)
	case err != nil:
		return fmt.Errorf("STATE_DIR=%s: replaying %s: %w", f.dir, f.path, err)
	}
	if len(res.damaged) > 0 {
		return f.salvage(fi.Size(), res)
	}
	f.size = int64(headerLen) + res.good
	if dropped := fi.Size() - f.size; dropped > 0 {
		// What a crash mid-append leaves: the write never returned.
		f.logger.Warn("state: the log ended in a torn record, cut off", "file", f.path, "dropped_bytes", dropped)
		if err := f.file.Truncate(f.size); err != nil {
			return fmt.Errorf("STATE_DIR=%s: cutting the torn end off %s: %w", f.dir, f.path, err)
		}
		if err := fdatasync(f.file); err != nil {
			return fmt.Errorf("STATE_DIR=%s: syncing %s: %w", f.dir, f.path, err)
		}
	}
	f.checkAt = 2*snapshotSize(&f.state, f.now().Round(0)) + f.slack
	return nil
}

// salvage ends the load of a log damaged in the middle: it copies the log
// aside (cursor2api.log.damaged-<time>), rewrites it from what replay read,
// and reports the damage as an error. If the copy fails, the start stops
// with the log untouched.
func (f *File) salvage(size int64, res replayed) error {
	now := f.now().Round(0)
	aside := f.path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if err := copyFile(f.file, size, aside); err != nil {
		return fmt.Errorf("STATE_DIR=%s: %s is damaged at byte %d and could not be copied aside before its repair (%w): free some space, or move the file away to start empty", f.dir, f.path, int64(headerLen)+res.damaged[0].from, err)
	}
	tmp := f.path + ".tmp"
	out, written, err := f.writeSnapshot(tmp, now)
	if err == nil {
		err = f.install(out, tmp)
	}
	if err != nil {
		return fmt.Errorf("STATE_DIR=%s: %s is damaged at byte %d (kept as %s); rewriting it: %w", f.dir, f.path, int64(headerLen)+res.damaged[0].from, aside, err)
	}
	f.state.dropExpired(now)
	f.size, f.checkAt = written, 2*written+f.slack
	var skipped int64
	ranges := make([]string, len(res.damaged))
	for i, d := range res.damaged {
		skipped += d.to - d.from
		ranges[i] = fmt.Sprintf("%d-%d", int64(headerLen)+d.from, int64(headerLen)+d.to)
	}
	f.logger.Error("state: the log was damaged in the middle; the damaged bytes were skipped, every sound record kept, and the log as it was copied aside",
		"file", f.path, "kept_as", aside, "damaged_bytes", ranges, "skipped_bytes", skipped,
		"records_after_damage", res.after, "torn_tail_bytes", size-int64(headerLen)-res.good)
	return nil
}

// copyFile copies the first size bytes of from to a new file at path,
// synced with its directory.
func copyFile(from *os.File, size int64, path string) error {
	to, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(to, io.NewSectionReader(from, 0, size))
	if err == nil {
		err = fdatasync(to)
	}
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// start begins a log that has no header (size bytes, fewer than a
// header's: new, or cut short as it was begun).
func (f *File) start(size int64) error {
	legacy := filepath.Join(f.dir, legacyFileName)
	if _, err := os.Stat(legacy); err == nil {
		return f.migrate(legacy)
	}
	if size > 0 {
		f.logger.Warn("state: the log ended in a torn header, cut off", "file", f.path, "dropped_bytes", size)
		if err := f.file.Truncate(0); err != nil {
			return fmt.Errorf("STATE_DIR=%s: %w", f.dir, err)
		}
	}
	if _, err := f.file.Write(appendHeader(nil)); err != nil {
		return fmt.Errorf("STATE_DIR=%s: writing %s: %w", f.dir, FileName, err)
	}
	if err := fdatasync(f.file); err != nil {
		return fmt.Errorf("STATE_DIR=%s: syncing %s: %w", f.dir, FileName, err)
	}
	// The new file's name, synced, so that the log is found after a
	// power cut.
	if err := syncDir(f.dir); err != nil {
		return fmt.Errorf("STATE_DIR=%s: %w", f.dir, err)
	}
	f.size = int64(headerLen)
	f.checkAt = f.slack
	return nil
}

// Path is the log's path.
func (f *File) Path() string { return f.path }

// Engine implements Store.
func (*File) Engine() string { return "file" }

// Ping implements Store: it fails once the store is closed or while the
// log's last append or sync failed.
func (f *File) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	closed, werr := f.closed, f.werr
	f.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if werr != nil {
		return werr
	}
	f.smu.Lock()
	defer f.smu.Unlock()
	return f.syncErr
}

// Close implements Store. It stops the syncer, syncs the log and closes
// it, which lets go of its lock; writes after it get ErrClosed. A second
// Close does nothing.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	if !f.always {
		close(f.stop)
	}
	<-f.stopped
	err := f.syncTo(f.written.Load())
	f.smu.Lock()
	for f.syncing {
		f.scond.Wait()
	}
	f.gone = true
	if cerr := f.file.Close(); err == nil {
		err = cerr
	}
	f.scond.Broadcast()
	f.smu.Unlock()
	return err
}

// lock begins a write: it locks mu, unless the store is closed or ctx
// has ended.
func (f *File) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// appendRecord appends the record f.buf holds to the log with one
// write, under mu, and returns its number.
func (f *File) appendRecord() (int64, error) {
	if n := len(f.buf) - frameLen; n > maxRecord {
		// Replay would take it for a torn tail and cut it off, with all
		// after it.
		return 0, fmt.Errorf("state: a write of %d bytes is over the state log's limit of %d", n, maxRecord)
	}
	if f.torn {
		if err := f.file.Truncate(f.size); err != nil {
			f.werr = fmt.Errorf("state: cutting a torn write off %s: %w", f.path, err)
			return 0, f.werr
		}
		f.torn = false
	}
	n, err := f.file.Write(f.buf)
	if err != nil {
		if n > 0 {
			f.torn = true
			if f.file.Truncate(f.size) == nil {
				f.torn = false
			}
		}
		f.werr = fmt.Errorf("state: appending to %s: %w", f.path, err)
		return 0, f.werr
	}
	f.werr = nil
	f.size += int64(n)
	if cap(f.buf) > 1<<20 {
		f.buf = nil // one large value does not keep its buffer
	}
	return f.written.Add(1), nil
}

// applied ends a write applied at now under mu: it compacts the log when
// due, unlocks, and waits for the sync STATE_SYNC asks of record seq.
func (f *File) applied(now time.Time, seq int64) error {
	if f.size > f.checkAt {
		f.maybeCompact(now)
	}
	f.mu.Unlock()
	if f.always {
		return f.syncTo(seq)
	}
	if !f.pending.Swap(true) {
		select {
		case f.kick <- struct{}{}:
		default: // the syncer has a kick pending already
		}
	}
	return nil
}

// Put implements Store.
func (f *File) Put(ctx context.Context, table, key string, value []byte, lim Limits) error {
	_, err := f.put(ctx, table, key, value, lim)
	return err
}

// put is Put, which also returns its record's number.
func (f *File) put(ctx context.Context, table, key string, value []byte, lim Limits) (int64, error) {
	if err := f.lock(ctx); err != nil {
		return 0, err
	}
	now := f.now().Round(0) // the moment as the log keeps it
	f.buf = encodePut(f.buf, now, table, key, value, lim)
	seq, err := f.appendRecord()
	if err != nil {
		f.mu.Unlock()
		return 0, err
	}
	f.state.put(now, table, key, value, lim)
	return seq, f.applied(now, seq)
}

// Get implements Store.
func (f *File) Get(ctx context.Context, table, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	// An expired value stays (unreadable) until a write evicts it, as
	// the log's replay would have it.
	return f.state.get(f.now(), table, key, false)
}

// Delete implements Store.
func (f *File) Delete(ctx context.Context, table, key string) (bool, error) {
	if err := f.lock(ctx); err != nil {
		return false, err
	}
	now := f.now().Round(0)
	f.buf = encodeDelete(f.buf, now, table, key)
	seq, err := f.appendRecord()
	if err != nil {
		f.mu.Unlock()
		return false, err
	}
	kept := f.state.del(now, table, key)
	return kept, f.applied(now, seq)
}

// Add implements Store.
func (f *File) Add(ctx context.Context, table, key string, add map[string]int64, ttl time.Duration) error {
	if err := f.lock(ctx); err != nil {
		return err
	}
	now := f.now().Round(0)
	f.buf = encodeAdd(f.buf, now, table, key, add, ttl)
	seq, err := f.appendRecord()
	if err != nil {
		f.mu.Unlock()
		return err
	}
	f.state.add(now, table, key, add, ttl)
	return f.applied(now, seq)
}

// Counters implements Store.
func (f *File) Counters(ctx context.Context, table, key string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	return f.state.counterValues(f.now(), table, key), nil
}

// syncTo returns once a sync covers record seq, syncing itself when no
// sync is under way: writes that wait together share one sync.
func (f *File) syncTo(seq int64) error {
	f.smu.Lock()
	defer f.smu.Unlock()
	for {
		switch {
		case seq <= f.synced:
			return nil
		case seq <= f.failedUpTo:
			return f.syncErr
		case f.gone:
			return ErrClosed
		case f.syncing:
			f.scond.Wait()
			continue
		}
		f.syncing = true
		file, target := f.file, f.written.Load()
		f.smu.Unlock()
		err := f.syncFile(file)
		f.syncs.Add(1)
		f.smu.Lock()
		f.syncing = false
		if err != nil {
			f.syncErr = fmt.Errorf("state: syncing %s: %w", f.path, err)
			f.failedUpTo = max(f.failedUpTo, target)
		} else {
			f.syncErr = nil
			f.synced = max(f.synced, target)
		}
		f.scond.Broadcast()
	}
}

// syncer is SyncSecond's goroutine: woken by the first write after a
// sync, it syncs a second later what was written by then. An idle store
// is not synced.
func (f *File) syncer() {
	defer close(f.stopped)
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
		// A write after this is kicked again; one before is covered.
		f.pending.Store(false)
		if err := f.syncTo(f.written.Load()); err != nil {
			f.logger.Warn("state: syncing the state log failed", "error", err)
		}
	}
}

// maybeCompact compacts the log, under mu, when it is past twice the
// live state's snapshot plus compactSlack; else it puts off the next
// look until the log is past that.
func (f *File) maybeCompact(now time.Time) {
	live := snapshotSize(&f.state, now)
	if f.size <= 2*live+f.slack {
		f.checkAt = 2*live + f.slack
		return
	}
	if err := f.compact(now); err != nil {
		f.logger.Warn("state: compacting the state log failed; it goes on growing", "file", f.path, "error", err)
		f.checkAt = f.size + f.slack
	}
}

// compact rewrites the log under mu as a snapshot of the live state at now
// (tmp file, sync, rename, directory sync). Writes wait meanwhile:
// milliseconds for a typical state, about a second for 256 MB on an SSD.
func (f *File) compact(now time.Time) error {
	tmp := f.path + ".tmp"
	out, size, err := f.writeSnapshot(tmp, now)
	if err != nil {
		return err
	}
	if err := f.install(out, tmp); err != nil {
		return err
	}
	// Memory as the new log has it.
	f.state.dropExpired(now)
	f.size, f.torn, f.werr = size, false, nil
	f.checkAt = 2*size + f.slack
	f.compactions.Add(1)
	f.logger.Debug("state: compacted the state log", "file", f.path, "bytes", size)
	return nil
}

// writeSnapshot writes a log holding the live state at now to path,
// synced and locked, and returns it open with its size.
func (f *File) writeSnapshot(path string, now time.Time) (*os.File, int64, error) {
	out, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("creating %s: %w", path, err)
	}
	fail := func(err error) (*os.File, int64, error) {
		_ = out.Close()
		_ = os.Remove(path)
		return nil, 0, err
	}
	// Locked from before it is the log: another process never holds it.
	if err := lockFile(out); err != nil {
		return fail(fmt.Errorf("locking %s: %w", path, err))
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if _, err := w.Write(appendHeader(nil)); err != nil {
		return fail(fmt.Errorf("writing %s: %w", path, err))
	}
	n, buf, err := snapshot(w, &f.state, now, f.buf)
	f.buf = buf
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = fdatasync(out)
	}
	if err != nil {
		return fail(fmt.Errorf("writing %s: %w", path, err))
	}
	return out, int64(headerLen) + n, nil
}

// install renames the synced log out (at path tmp) over the log and makes
// it the one appended to, under mu; every record written is then synced.
func (f *File) install(out *os.File, tmp string) error {
	if err := os.Rename(tmp, f.path); err != nil {
		_ = out.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	derr := syncDir(f.dir)
	f.smu.Lock()
	for f.syncing {
		f.scond.Wait()
	}
	old := f.file
	f.file = out
	f.synced = f.written.Load()
	f.syncErr = nil
	f.scond.Broadcast()
	f.smu.Unlock()
	_ = old.Close()
	if derr != nil {
		// The rename may not survive a power cut; it stands otherwise.
		f.logger.Warn("state: syncing the state directory failed", "dir", f.dir, "error", derr)
	}
	return nil
}

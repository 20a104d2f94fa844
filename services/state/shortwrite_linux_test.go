package state

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShortWriteHelper is the writer TestFileShortAppend runs: with
// STATE_SHORT_DIR set, it lowers its own file size limit (RLIMIT_FSIZE)
// so that the kernel takes only the first 10 bytes of a record, which is
// a short write and EFBIG, then raises it again and writes on. The limit
// is the whole process's, so this runs in a process of its own.
func TestShortWriteHelper(t *testing.T) {
	dir := os.Getenv("STATE_SHORT_DIR")
	if dir == "" {
		t.Skip("the child process of TestFileShortAppend")
	}
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(2)
	}
	s, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		fail("open: %v", err)
	}
	f := s.(*File)
	ctx := context.Background()
	if err := f.Put(ctx, "r", "before", []byte("kept"), hour); err != nil {
		fail("put before: %v", err)
	}
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		fail("getrlimit: %v", err)
	}
	f.mu.Lock()
	size := f.size
	f.mu.Unlock()
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(size) + 10, Max: limit.Max}); err != nil {
		fail("setrlimit: %v", err)
	}
	err = f.Put(ctx, "r", "torn", bytes.Repeat([]byte("x"), 4096), hour)
	if restore := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); restore != nil {
		fail("setrlimit back: %v", restore)
	}
	if err == nil {
		fail("the short write was taken as whole")
	}
	if st, err := os.Stat(f.Path()); err != nil || st.Size() != size {
		fail("after the short write the log is %d bytes (%v), not %d: the torn record stays", st.Size(), err, size)
	}
	if err := f.Put(ctx, "r", "after", []byte("kept too"), hour); err != nil {
		fail("put after: %v", err)
	}
	if err := f.Close(); err != nil {
		fail("close: %v", err)
	}
	fmt.Println("ok")
}

// TestFileShortAppend: a record the kernel takes only part of (a full
// disk, a file size limit) fails, and is cut off the log at once, so the
// records after it are not lost behind a torn one at the next start.
func TestFileShortAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShortWriteHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STATE_SHORT_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "ok")

	var logs bytes.Buffer
	f := openTestFile(t, dir, time.Now, SyncSecond, &logs)
	for key, want := range map[string]string{"before": "kept", "after": "kept too"} {
		got, err := f.Get(t.Context(), "r", key)
		require.NoError(t, err, key)
		assert.Equal(t, want, string(got), key)
	}
	_, err = f.Get(t.Context(), "r", "torn")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.NotContains(t, logs.String(), "torn", "the next start finds no torn tail")
}

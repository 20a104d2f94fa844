package state

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKillHelper is the writer TestFileSurvivesKill kills: run by the
// test binary itself with STATE_KILL_DIR set, it writes as fast as it
// can and prints the number of every write once it has returned.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv("STATE_KILL_DIR")
	if dir == "" {
		t.Skip("the child process of TestFileSurvivesKill")
	}
	s, err := Open(context.Background(), Options{Dir: dir, Sync: os.Getenv("STATE_KILL_SYNC")})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	value := make([]byte, 4096) // records larger than a page
	for i := 0; ; i++ {
		if err := s.Put(context.Background(), "responses", strconv.Itoa(i), value, Limits{TTL: time.Hour}); err != nil {
			fmt.Println("put:", err)
			os.Exit(2)
		}
		if err := s.Add(context.Background(), "usage", "h", map[string]int64{"requests": 1}, time.Hour); err != nil {
			fmt.Println("add:", err)
			os.Exit(2)
		}
		fmt.Println(i)
	}
}

// TestFileSurvivesKill kills a writer with SIGKILL in the middle of a
// burst of writes, in each STATE_SYNC mode; the next open finds the file
// sound and every write the writer saw returned.
func TestFileSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	for _, mode := range []string{SyncSecond, SyncAlways} {
		t.Run(mode, func(t *testing.T) { survivesKill(t, mode) })
	}
}

func survivesKill(t *testing.T, mode string) {
	dir := t.TempDir()
	for round := range 3 { // each round kills at a different moment
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STATE_KILL_DIR="+dir, "STATE_KILL_SYNC="+mode)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		last := -1
		wantLines := 100 + 70*round
		deadline := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		for lines.Scan() {
			n, err := strconv.Atoi(lines.Text())
			require.NoError(t, err, "the writer said %q", lines.Text())
			last = n
			if n == wantLines {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				break
			}
		}
		deadline.Stop()
		_ = cmd.Wait()
		require.Equal(t, wantLines, last, "round %d: the writer was killed at its %dth write", round, wantLines)

		s, err := Open(t.Context(), Options{Dir: dir})
		require.NoError(t, err, "round %d: the file opens after the kill", round)
		for i := 0; i <= last; i++ {
			_, err := s.Get(t.Context(), "responses", strconv.Itoa(i))
			require.NoError(t, err, "round %d: write %d returned before the kill", round, i)
		}
		c, err := s.Counters(t.Context(), "usage", "h")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, c["requests"], int64(last+1), "round %d", round)
		require.NoError(t, s.Close())
		// The next round starts with an empty table, so its count starts again.
		require.NoError(t, os.Remove(dir+"/"+FileName))
	}
}

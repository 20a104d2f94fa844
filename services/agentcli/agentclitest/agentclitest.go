//go:build unix

// Package agentclitest builds the fake Cursor Agent CLI of
// services/agentcli/testdata/fakeagent for tests and reads what it
// recorded. The fake replays a stream-json script chosen by
// "SCENARIO:<name>" in the prompt; see its package comment for the
// scenarios and the files it keeps under $HOME.
package agentclitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cursor2api/utils/gobuild"
)

// Build compiles the fake agent into a temporary directory of t and
// returns its path.
func Build(t testing.TB) string {
	t.Helper()
	return gobuild.ForTest(t, BuildTo)
}

// BuildTo compiles the fake agent into dir and returns its path, for a
// TestMain that builds it once for a whole package.
func BuildTo(dir string) (string, error) {
	bin, err := gobuild.Beside(filepath.Join("..", "testdata", "fakeagent"), dir, "agent")
	if err != nil {
		return "", fmt.Errorf("agentclitest: building the fake agent: %w", err)
	}
	return bin, nil
}

// Home is the fake's $HOME: its controls and its records.
type Home string

// NewHome returns an empty home in a temporary directory of t.
func NewHome(t testing.TB) Home { return Home(t.TempDir()) }

// Call is what one chat run of the fake got.
type Call struct {
	PID     int
	Args    []string `json:"args"`
	Prompt  string   `json:"prompt"`
	Env     []string `json:"env"`
	Cwd     string   `json:"cwd"`
	CLIJSON string   `json:"cli_json"`
}

// Calls returns the recorded chat runs, in pid order.
func (h Home) Calls(t testing.TB) []Call {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(string(h), "calls"))
	var calls []Call
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(string(h), "calls", e.Name()))
		if err != nil {
			t.Fatalf("agentclitest: %v", err)
		}
		var c Call
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("agentclitest: call record %s: %v", e.Name(), err)
		}
		c.PID, _ = strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		calls = append(calls, c)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].PID < calls[j].PID })
	return calls
}

// PIDs returns every process the fake started: its chat runs and the
// grandchildren of the hanging scenarios (child true).
func (h Home) PIDs() (pids []int, children []int) {
	entries, _ := os.ReadDir(filepath.Join(string(h), "pids"))
	for _, e := range entries {
		name, child := strings.CutSuffix(e.Name(), "-child")
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if child {
			children = append(children, pid)
		} else {
			pids = append(pids, pid)
		}
	}
	return pids, children
}

// Peak is the largest number of chat runs alive at once that any run saw
// when it started.
func (h Home) Peak() int {
	entries, _ := os.ReadDir(filepath.Join(string(h), "peaks"))
	peak := 0
	for _, e := range entries {
		_, n, _ := strings.Cut(e.Name(), "-")
		if v, err := strconv.Atoi(n); err == nil {
			peak = max(peak, v)
		}
	}
	return peak
}

// ModelsCalls is how many times `agent models` ran.
func (h Home) ModelsCalls() int {
	b, _ := os.ReadFile(filepath.Join(string(h), "models-calls"))
	return len(strings.Fields(string(b)))
}

// SetModels makes `agent models` print out.
func (h Home) SetModels(t testing.TB, out string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(string(h), "models"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// SetLoggedOut makes the fake behave as a CLI that is not logged in.
func (h Home) SetLoggedOut(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(string(h), "logged-out"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Gone reports whether pid has ended: it no longer exists, or (for a
// grandchild whose new parent does not reap it) it is a zombie.
func Gone(pid int, zombieOK bool) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if !zombieOK {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// WaitGone waits up to bound for every process the fake started to end,
// and fails t naming those still alive.
func (h Home) WaitGone(t testing.TB, bound time.Duration) {
	t.Helper()
	pids, children := h.PIDs()
	deadline := time.Now().Add(bound)
	for {
		var alive []int
		for _, p := range pids {
			if !Gone(p, false) {
				alive = append(alive, p)
			}
		}
		for _, p := range children {
			if !Gone(p, true) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentclitest: processes still alive after %s: %v", bound, alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

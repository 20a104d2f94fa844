package handlers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// geminiSettings is ~/.gemini/settings.json for Gemini CLI against the
// gateway: the API-key auth it otherwise refuses with a custom base URL
// ("Invalid auth method selected."), and no usage statistics, which would
// leave the machine.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}`

// geminiCLI is the real Gemini CLI: GEMINI_BIN (.ci/run installs the npm
// package and sets it), else gemini on PATH. It is a Node script; NODE_BIN
// or NODE22_BIN, when set, names the Node that runs it.
func geminiCLI(t *testing.T) []string {
	t.Helper()
	bin := agentBinary(t, "GEMINI_BIN", "gemini", "@google/gemini-cli@0.61.0")
	for _, v := range []string{"NODE_BIN", "NODE22_BIN"} {
		if node := os.Getenv(v); node != "" {
			return []string{node, bin}
		}
	}
	return []string{bin}
}

// runGemini runs gemini -p headless in work, with its HOME and settings
// isolated and its proxy a closed port, against the gateway at url, with
// extra arguments; it returns what the CLI printed.
func runGemini(t *testing.T, s *stack, work, prompt string, extra ...string) []byte {
	t.Helper()
	cli := geminiCLI(t)
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(append(cli[1:], "-p", prompt, "--yolo", "--skip-trust"), extra...)
	cmd := exec.CommandContext(ctx, cli[0], args...)
	cmd.Dir = work
	cmd.Env = offlineEnv("HOME="+home, "GEMINI_API_KEY=gm-key", "GOOGLE_GEMINI_BASE_URL="+s.URL,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1", "CI=true")
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second // a child left holding its output cannot hold the test
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "gemini:\n%s", out)
	return out
}

// parallelTurns is a model that calls read_file on notes.txt in work and
// run_shell_command in one turn, then answers.
func parallelTurns(work string) [][]string {
	return [][]string{
		{"Reading the notes and writing the file.\nTRIGGER\n",
			`<invoke name="read_file">{"file_path": "` + filepath.Join(work, "notes.txt") + `"}</invoke>` + "\n",
			`<invoke name="run_shell_command">{"command": "printf 'made by gemini' > out.txt", "description": "write out.txt"}</invoke>`},
		{"Done: the word is tangerine; FINAL-ANSWER-7."},
	}
}

// checkParallelRun checks what the CLI did with parallelTurns: both tools
// ran, both results went back, the answer printed once.
func checkParallelRun(t *testing.T, work string, out []byte, turns []cursortest.Request) {
	t.Helper()
	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "the CLI did not run the shell call:\n%s", out)
	assert.Equal(t, "made by gemini", string(made))
	assert.Equal(t, 1, strings.Count(string(out), "FINAL-ANSWER-7"), "the final answer, printed once:\n%s", out)

	require.Len(t, turns, 2, "one upstream request a turn:\n%s", out)
	system := turns[0].Messages[0].Text
	assert.Contains(t, system, `<function name="read_file">`, "the CLI's tools are offered")
	assert.Contains(t, system, `<function name="run_shell_command">`)
	last := turns[1].Messages[len(turns[1].Messages)-1].Text
	assert.Contains(t, last, `name="read_file"`)
	assert.Contains(t, last, "tangerine", "the file tool's result came back")
	assert.Contains(t, last, `name="run_shell_command"`, "and the shell tool's")
}

// TestGeminiCLIRunsParallelTools drives the real Gemini CLI headless
// (gemini -p --yolo -m) against the gateway in front of the fake upstream:
// the model calls a file tool and a shell tool in one turn, the CLI runs
// both, sends both results back, and prints the final answer once.
func TestGeminiCLIRunsParallelTools(t *testing.T) {
	geminiCLI(t) // skip early without it
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("the secret word is tangerine\n"), 0o644))
	s := newStack(t, map[string]string{"API_KEY": "gm-key"}, script(t, parallelTurns(work)...))
	out := runGemini(t, s, work, "Read notes.txt and create out.txt.", "-m", "gemini-3.1-pro-preview")
	checkParallelRun(t, work, out, s.up.Requests())
	s.Close() // Gemini CLI may exit before its last request's access line is written: Close waits for the handlers
	logs := s.logs.String()
	assert.Equal(t, 2, strings.Count(logs, "door=gemini"), logs)
	assert.Equal(t, 2, strings.Count(logs, "path=/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent"), logs)
	assert.NotContains(t, logs, "status=4", logs)
}

// TestGeminiCLIRoutesWithoutAModel: without -m the CLI first asks its router
// model, in JSON mode, then streams from the model it picked. Both names
// reach the upstream through MODEL_ALIASES, JSON mode as an instruction.
func TestGeminiCLIRoutesWithoutAModel(t *testing.T) {
	geminiCLI(t)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("the secret word is tangerine\n"), 0o644))
	turns := parallelTurns(work)
	var routed, answered atomic.Int32
	var mu sync.Mutex
	var turnReqs []cursortest.Request
	model := script(t, turns...)
	s := newStack(t, map[string]string{"API_KEY": "gm-key"}, func(_ int, req cursortest.Request) cursortest.Response {
		if system := req.Messages[0].Text; strings.Contains(system, "Answer with one JSON value only") {
			routed.Add(1)
			if strings.Contains(system, "complexity_score") {
				return cursortest.Text(&defaultUsage, `{"complexity_reasoning": "a simple task", "complexity_score": 10}`)
			}
			return cursortest.Text(&defaultUsage, `{"reasoning": "a simple task", "model_choice": "flash"}`)
		}
		mu.Lock()
		turnReqs = append(turnReqs, req)
		mu.Unlock()
		return model(int(answered.Add(1))-1, req)
	})
	out := runGemini(t, s, work, "Read notes.txt and create out.txt.")
	s.Close() // Gemini CLI may exit before its last request's access line is written: Close waits for the handlers
	mu.Lock()
	defer mu.Unlock()
	checkParallelRun(t, work, out, turnReqs)
	assert.Positive(t, routed.Load(), "the router asked")
	logs := s.logs.String()
	assert.Regexp(t, `path=/v1beta/models/gemini-[0-9.]+-flash-lite:generateContent .*status=200`, logs)
	assert.Regexp(t, `path=/v1beta/models/gemini-[0-9a-z.-]+:streamGenerateContent .*status=200`, logs)
	assert.NotContains(t, logs, "status=4", logs)
}

package handlers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestGeminiCLIRunsParallelTools drives the real Gemini CLI headless
// (gemini -p --yolo) against the gateway in front of the fake upstream:
// the model calls a file tool and a shell tool in one turn, the CLI runs
// both, sends both results back, and prints the final answer once.
func TestGeminiCLIRunsParallelTools(t *testing.T) {
	cli := geminiCLI(t)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("the secret word is tangerine\n"), 0o644))
	s := newStack(t, map[string]string{"API_KEY": "gm-key"}, script(t,
		[]string{"Reading the notes and writing the file.\nTRIGGER\n",
			`<invoke name="read_file">{"file_path": "` + filepath.Join(work, "notes.txt") + `"}</invoke>` + "\n",
			`<invoke name="run_shell_command">{"command": "printf 'made by gemini' > out.txt", "description": "write out.txt"}</invoke>`},
		[]string{"Done: the word is tangerine; FINAL-ANSWER-7."},
	))

	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(cli[1:], "-p", "Read notes.txt and create out.txt.", "--yolo", "-m", "gemini-3.1-pro-preview", "--skip-trust")
	cmd := exec.CommandContext(ctx, cli[0], args...)
	cmd.Dir = work
	cmd.Env = offlineEnv("HOME="+home, "GEMINI_API_KEY=gm-key", "GOOGLE_GEMINI_BASE_URL="+s.URL,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1", "CI=true")
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second // a child left holding its output cannot hold the test
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "gemini:\n%s\ngateway log:\n%s", out, s.logs.String())

	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "the CLI did not run the shell call:\n%s", out)
	assert.Equal(t, "made by gemini", string(made))
	assert.Equal(t, 1, strings.Count(string(out), "FINAL-ANSWER-7"), "the final answer, printed once:\n%s", out)

	reqs := s.up.Requests()
	require.Len(t, reqs, 2, "one upstream request a turn:\n%s", out)
	system := reqs[0].Messages[0].Text
	assert.Contains(t, system, `<function name="read_file">`, "the CLI's tools are offered")
	assert.Contains(t, system, `<function name="run_shell_command">`)
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Text
	assert.Contains(t, last, `name="read_file"`)
	assert.Contains(t, last, "tangerine", "the file tool's result came back")
	assert.Contains(t, last, `name="run_shell_command"`, "and the shell tool's")
	logs := s.logs.String()
	assert.Equal(t, 2, strings.Count(logs, "door=gemini"), logs)
	assert.NotContains(t, logs, "status=4", logs)
}

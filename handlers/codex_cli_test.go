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

// codexBinary is the real Codex CLI to drive: $CODEX_BIN (.ci/run installs
// the npm package and sets it), else codex on PATH.
func codexBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CODEX_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("codex"); err == nil {
		return bin
	}
	t.Skip("SKIPPED: no Codex CLI (set CODEX_BIN, or npm install @openai/codex); .ci/run installs it")
	return ""
}

// TestCodexCLIRunsAToolCall drives the real Codex CLI headless (codex exec)
// against the gateway in front of the fake upstream: Codex sends its own
// Responses requests, runs the exec_command call the model makes, sends
// the result back, and prints the model's last answer. The file the
// command writes proves the call reached Codex in a shape it runs.
func TestCodexCLIRunsAToolCall(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, nil, script(t,
		[]string{"I'll create the file.\nTRIGGER\n", `<invoke name="exec_command">{"cmd": "printf 'made by codex' > out.txt", "login": false}</invoke>`},
		[]string{"Created out.txt."},
	))
	home, work := t.TempDir(), t.TempDir()
	config := `model = "claude-sonnet-4.6"
model_provider = "cursor2api"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.cursor2api]
name = "cursor2api"
base_url = "` + s.URL + `/v1"
wire_api = "responses"
env_key = "CURSOR2API_KEY"
`
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-C", work, "Create out.txt saying 'made by codex'.")
	// Anything Codex sends elsewhere than the gateway goes to a closed
	// loopback port: the test never leaves the machine.
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+home, "CURSOR2API_KEY=sk-codex",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "codex exec:\n%s", out)

	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Codex did not run the call:\n%s", out)
	assert.Equal(t, "made by codex", string(made))
	assert.Contains(t, string(out), "Created out.txt.", "Codex prints the model's last answer")

	reqs := s.up.Requests()
	require.Len(t, reqs, 2, "one upstream request a turn:\n%s", out)
	first := reqs[0].Messages[0]
	require.Equal(t, "system", first.Role)
	assert.Contains(t, first.Text, `<function name="exec_command">`, "Codex's tools are offered")
	assert.Contains(t, first.Text, `<function name="multi_agent_v1__spawn_agent">`, "and its namespaced ones")
	var replay strings.Builder
	for _, m := range reqs[1].Messages {
		replay.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, replay.String(), `<invoke name="exec_command">`, "Codex sends the call back as history")
	assert.Contains(t, replay.String(), `<tool_result id="call_`, "with its result")
	logs := s.logs.String()
	assert.Equal(t, 2, strings.Count(logs, "door=responses"), logs)
	assert.NotContains(t, logs, "status=4", logs)
}

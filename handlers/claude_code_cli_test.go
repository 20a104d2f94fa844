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
	"github.com/tidwall/gjson"
)

// TestClaudeCodeCLIRunsToolCalls drives the real Claude Code CLI headless
// (claude -p) against the Anthropic door in front of the fake upstream.
// The model calls Bash and Write in one turn; Claude Code runs both,
// sends their results back, and reports the model's last answer. The
// files on disk prove the calls reached it in a shape it runs, and the
// access log that none of its requests was refused.
func TestClaudeCodeCLIRunsToolCalls(t *testing.T) {
	bin := agentBinary(t, "CLAUDE_BIN", "claude", "@anthropic-ai/claude-code@2.1.330")
	work := t.TempDir()
	notes := filepath.Join(work, "notes.md")
	s := newStack(t, nil, script(t,
		[]string{"I'll create both files.\nTRIGGER\n",
			`<invoke name="Bash">{"command": "printf 'made by claude' > out.txt", "description": "Create out.txt"}</invoke>` + "\n",
			`<invoke name="Write">{"file_path": "` + notes + `", "content": "# Notes\n<b>bold</b> & done\n"}</invoke>`},
		[]string{"Created out.txt and notes.md."},
	))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Create out.txt and notes.md.", "--output-format", "json", "--allowedTools", "Bash,Write")
	cmd.Dir = work
	home := t.TempDir()
	cmd.Env = offlineEnv("HOME="+home, "ANTHROPIC_BASE_URL="+s.URL, "ANTHROPIC_API_KEY=sk-claude",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	require.NoError(t, err, "claude -p: %s", out)

	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Claude Code did not run Bash: %s", out)
	assert.Equal(t, "made by claude", string(made))
	written, err := os.ReadFile(notes)
	require.NoError(t, err, "Claude Code did not run Write: %s", out)
	assert.Equal(t, "# Notes\n<b>bold</b> & done\n", string(written))

	result := gjson.ParseBytes(out)
	assert.Equal(t, "Created out.txt and notes.md.", result.Get("result").String(), "%s", out)
	assert.False(t, result.Get("is_error").Bool(), "%s", out)

	logs := s.logs.String()
	assert.NotContains(t, logs, "status=4", "Claude Code's requests are all taken as they are")
	reqs := s.up.Requests()
	require.Equal(t, 2, len(reqs), "one upstream request a turn: %s", out)
	var replay strings.Builder
	for _, m := range reqs[1].Messages {
		replay.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, replay.String(), `<invoke name="Bash">`)
	assert.Contains(t, replay.String(), `<invoke name="Write">`)
	assert.Equal(t, 2, strings.Count(replay.String(), "<tool_result id="), "both results go back")
	assert.Contains(t, replay.String(), "# Environment", "its mid-conversation system message reaches the model")
}

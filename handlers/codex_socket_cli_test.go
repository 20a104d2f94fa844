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

// runCodexOpenAI runs codex exec in work with prompt against the gateway
// at url as most guides set Codex up: openai_base_url alone, Codex's own
// OpenAI provider, which opens the Responses WebSocket. With it Codex
// takes the key from CODEX_API_KEY (codex exec), or from codex login
// --with-api-key when login is set; never from OPENAI_API_KEY. extra
// are more top-level lines of config.toml.
func runCodexOpenAI(t *testing.T, bin, url, work, prompt string, login bool, extra ...string) []byte {
	t.Helper()
	home := t.TempDir()
	config := `model = "claude-sonnet-4.6"
openai_base_url = "` + url + `/v1"
check_for_update_on_startup = false
` + strings.Join(extra, "\n") + `

[analytics]
enabled = false
`
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := "CODEX_API_KEY=sk-codex"
	if login {
		cmd := exec.CommandContext(ctx, bin, "login", "--with-api-key")
		cmd.Env = offlineEnv("CODEX_HOME="+home, "HOME="+home)
		cmd.Stdin = strings.NewReader("sk-codex\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "codex login:\n%s", out)
		key = "CODEX_API_KEY="
	}
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-C", work, prompt)
	cmd.Env = offlineEnv("CODEX_HOME="+home, "HOME="+home, key, "OPENAI_API_KEY=sk-not-this-one")
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "codex exec:\n%s", out)
	return out
}

// TestCodexCLIOverTheWebSocket drives the real Codex with openai_base_url
// pointed at the gateway: its turns go over the Responses WebSocket from
// the first (no "Reconnecting", no fallback to HTTPS), with its warm-up,
// and a tool call round-trips over it: Codex runs the call and sends only
// its output back, naming the response before.
func TestCodexCLIOverTheWebSocket(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-codex"}, script(t,
		[]string{"I'll create the file.\nTRIGGER\n", `<invoke name="exec_command">{"cmd": "printf 'over the socket' > out.txt", "login": false}</invoke>`},
		[]string{"Created out.txt."},
	))
	work := t.TempDir()
	out := runCodexOpenAI(t, bin, s.URL, work, "Create out.txt saying 'over the socket'.", false)

	assert.NotContains(t, string(out), "Reconnecting", "the first turn went over the WebSocket:\n%s", out)
	assert.NotContains(t, string(out), "Falling back", "%s", out)
	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Codex did not run the call:\n%s", out)
	assert.Equal(t, "over the socket", string(made))
	assert.Contains(t, string(out), "Created out.txt.")

	reqs := s.up.Requests()
	require.Equal(t, 2, len(reqs), "one upstream request a turn, none for the warm-up:\n%s", out)
	var replay strings.Builder
	for _, m := range reqs[1].Messages {
		replay.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, replay.String(), `<invoke name="exec_command">`, "the call, from the connection's memory")
	assert.Contains(t, replay.String(), `<tool_result id="call_`, "with its result")
	assert.Contains(t, replay.String(), "Create out.txt", "and the user's message")
	assert.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "status=101") }, 10*time.Second, 50*time.Millisecond,
		"the WebSocket closed:\n%s", s.logs.String())
	logs := s.logs.String()
	assert.NotContains(t, logs, "method=POST", "nothing went over HTTP POST:\n%s", logs)
	assert.GreaterOrEqual(t, strings.Count(logs, "turn="), 3, "a warm-up and two turns:\n%s", logs)
	assert.NotContains(t, logs, "status=4", logs)
	assert.Regexp(t, `websocket open" request_id=\S+ compression="permessage-deflate[^"]*" beta="responses_websockets=`, logs,
		"Codex offered permessage-deflate, and it was taken")
	// The warm-up first, then turns that name the one before and send
	// only their new items.
	assert.Contains(t, logs, `msg="responses: websocket turn" request_id=`, logs)
	assert.Regexp(t, `websocket turn" request_id=\S+\.1 bytes=\d+ continues=false generate=false`, logs)
	assert.Regexp(t, `websocket turn" request_id=\S+\.2 bytes=\d+ continues=true`, logs)
	assert.Regexp(t, `websocket turn" request_id=\S+\.3 bytes=\d+ continues=true`, logs)
	if os.Getenv("DUMP") != "" {
		t.Log(logs, string(out))
	}
}

// TestCodexCLIOverTheWebSocketWithALoggedInKey: the key codex login
// --with-api-key stored reaches the gateway too.
func TestCodexCLIOverTheWebSocketWithALoggedInKey(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-codex"}, script(t, []string{"Logged in fine."}))
	out := runCodexOpenAI(t, bin, s.URL, t.TempDir(), "Say hello.", true)
	assert.Contains(t, string(out), "Logged in fine.")
	assert.NotContains(t, string(out), "Reconnecting", "%s", out)
	assert.NotContains(t, s.logs.String(), "status=401", s.logs.String())
}

// TestCodexCLICompactsOverTheWebSocket: with openai_base_url alone, a
// session whose context passes model_auto_compact_token_limit compacts
// over the WebSocket (compaction_trigger in a response.create) and goes
// on, on the same connection, to its final answer.
func TestCodexCLICompactsOverTheWebSocket(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-codex"}, compactingModel(t))
	work := t.TempDir()
	out := string(runCodexOpenAI(t, bin, s.URL, work, "Create out.txt saying 'made by codex'.", false, "model_auto_compact_token_limit = 200"))

	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Codex did not run the call:\n%s", out)
	assert.Equal(t, "made by codex", string(made))
	assert.NotContains(t, out, "Reconnecting", out)
	assert.NotContains(t, out, "Falling back", out)
	assert.NotContains(t, out, "compaction output item", out)
	assert.Contains(t, out, "Finished after the compaction.", "the session goes on to its final answer:\n%s", out)

	reqs := s.up.Requests()
	require.Len(t, reqs, 3, "the call, the summary, the answer after it:\n%s", out)
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1].Text, "handoff summary", "the gateway asks its model for the summary")
	var after strings.Builder
	for _, m := range reqs[2].Messages {
		after.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, after.String(), codexCompactSummary, "the compaction item opens into the summary")
	assert.NotContains(t, after.String(), "exec_command with", "in place of the history")

	s.Close()
	logs := s.logs.String()
	assert.NotContains(t, logs, "method=POST", "every turn went over the WebSocket:\n%s", logs)
	assert.NotContains(t, logs, "status=4", logs)
}

package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// codexIdleTimeoutMS is the stream_idle_timeout_ms the idle tests give
// Codex: its timer counts parsed SSE events, so a keepalive that is an
// SSE comment does not reset it, and the upstream's pause outlasts it.
const codexIdleTimeoutMS = 3000

// pausingModel answers every request with a text in two halves and a
// silence of pause between them, as an upstream thinking or holding a
// long tool call does.
func pausingModel(pause time.Duration) func(int, cursortest.Request) cursortest.Response {
	return func(int, cursortest.Request) cursortest.Response {
		resp := cursortest.Text(&defaultUsage, "The first half, ", "and after a long silence the second half.")
		for i, ev := range resp.Events {
			if strings.Contains(ev, "second half") {
				resp.PauseAt, resp.Pause = i, pause
			}
		}
		return resp
	}
}

// codexIdleConfig is a config.toml for Codex with a custom provider at
// url whose stream idle timeout is codexIdleTimeoutMS, over HTTP or the
// Responses WebSocket.
func codexIdleConfig(url string, websockets bool) string {
	ws := "false"
	if websockets {
		ws = "true"
	}
	return `model = "claude-sonnet-4.6"
model_provider = "cursor2api"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.cursor2api]
name = "cursor2api"
base_url = "` + url + `/v1"
wire_api = "responses"
env_key = "CURSOR2API_KEY"
supports_websockets = ` + ws + `
stream_idle_timeout_ms = 3000
stream_max_retries = 1
`
}

// TestCodexCLIOutlastsASilentUpstream drives the real Codex over HTTP
// with a stream idle timeout of 3 s against an upstream silent for 7 s
// in the middle of its answer, the gateway keeping the stream alive
// every second: the keepalive is an event Codex counts, so the turn
// completes in one upstream request, without Codex dropping the stream
// and asking again.
func TestCodexCLIOutlastsASilentUpstream(t *testing.T) {
	testCodexOutlastsASilentUpstream(t, false)
}

func testCodexOutlastsASilentUpstream(t *testing.T, websockets bool) {
	bin := codexBinary(t)
	pause := 7 * time.Second
	require.Greater(t, pause, 2*codexIdleTimeoutMS*time.Millisecond, "the silence outlasts Codex's idle timeout twice over")
	s := newStack(t, map[string]string{"API_KEY": "sk-codex", "PING_INTERVAL": "1"}, pausingModel(pause))
	out := string(runCodexConfig(t, bin, codexIdleConfig(s.URL, websockets), t.TempDir(), "Say something in two halves."))

	assert.Contains(t, out, "The first half, and after a long silence the second half.", out)
	assert.NotContains(t, out, "idle timeout", out)
	assert.NotContains(t, out, "Reconnecting", out)
	assert.NotContains(t, out, "Falling back", "the turn stays on its transport:\n%s", out)
	assert.Len(t, s.up.Requests(), 1, "one upstream request for the turn, no retry:\n%s", out)
	if websockets {
		s.Close()
		assert.NotContains(t, s.logs.String(), "method=POST", "the turn went over the WebSocket:\n%s", s.logs.String())
	}
}

// TestCodexCLIOutlastsASilentUpstreamOverTheWebSocket: the same over the
// Responses WebSocket, where Codex 0.171's idle timer is not reset by the
// socket's pings: without an event it drops the socket and falls back to
// HTTPS. The built-in openai provider takes no stream_idle_timeout_ms
// (its id is reserved), so a custom provider with websockets stands in.
func TestCodexCLIOutlastsASilentUpstreamOverTheWebSocket(t *testing.T) {
	testCodexOutlastsASilentUpstream(t, true)
}

// TestResponsesKeepaliveOpenAINode: the official openai npm package's
// Responses stream helper reads the keepalive of a stream silent in the
// middle of its text (OpenAI's keepalive event) without losing the text
// it had, and ends with the whole answer.
func TestResponsesKeepaliveOpenAINode(t *testing.T) {
	dir := os.Getenv("OPENAI_NODE_DIR")
	if dir == "" {
		t.Skip("SKIPPED: openai-node's test needs OPENAI_NODE_DIR (npm install --prefix DIR openai@7.59.0); .ci/run sets it")
	}
	node := nodeBinary(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-node", "PING_INTERVAL": "1"}, pausingModel(3*time.Second))
	driver, err := filepath.Abs("testdata/openai_node_keepalive.mjs")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, driver)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_NODE_DIR=" + dir, "GATEWAY_URL=" + s.URL, "GATEWAY_KEY=sk-node"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var res struct {
		Type, Status, Text string
		Types              []string
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &res), "%s", out)
	require.Equal(t, "result", res.Type, "%s", out)
	assert.Equal(t, "completed", res.Status)
	assert.Equal(t, "The first half, and after a long silence the second half.", res.Text)
	first := slices.Index(res.Types, "response.output_text.delta")
	require.GreaterOrEqual(t, first, 0, "%v", res.Types)
	assert.Contains(t, res.Types[first:], "keepalive", "a keepalive came in the middle of the text: %v", res.Types)
}

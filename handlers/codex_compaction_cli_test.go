package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// codexCompactSummary is what the fake model writes when the gateway asks
// it to compact a Codex session.
const codexCompactSummary = "GOAL: out.txt must say 'made by codex'. DONE: exec_command wrote it. NEXT: tell the user it is finished."

// compactingModel is a fake model for a Codex session that compacts: it
// calls exec_command first, writes codexCompactSummary when asked to
// compact, and after the compaction, when its summary comes back in
// place of the history, gives the final answer.
func compactingModel(t *testing.T) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Role + ": " + m.Text + "\n")
		}
		last := req.Messages[len(req.Messages)-1].Text
		switch {
		case strings.Contains(last, "handoff summary"):
			return cursortest.Text(&defaultUsage, codexCompactSummary)
		case strings.Contains(all.String(), "compacted into the summary below"):
			return cursortest.Text(&defaultUsage, "Finished after the compaction.")
		case strings.Contains(all.String(), `<tool_result id="call_`):
			return cursortest.Text(&defaultUsage, "Finished without a compaction.")
		}
		trigger := sentTrigger(req)
		if trigger == "" {
			t.Errorf("upstream request %d: no tools offered", n)
		}
		return cursortest.Text(&defaultUsage, "I'll create the file.\n"+trigger+"\n",
			`<invoke name="exec_command">{"cmd": "printf 'made by codex' > out.txt", "login": false}</invoke>`)
	}
}

// runCodexConfig runs codex exec in work with prompt, flags and
// config.toml config, and returns what it printed.
func runCodexConfig(t *testing.T, bin, config, work, prompt string, flags ...string) []byte {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(append([]string{"exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-C", work}, flags...), prompt)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = offlineEnv("CODEX_HOME="+home, "HOME="+home, "CURSOR2API_KEY=sk-codex")
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second // a child left holding its output cannot hold the test
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "codex exec:\n%s", out)
	return out
}

// TestCodexCLICompacts drives the real Codex CLI over HTTP through a
// session whose context passes model_auto_compact_token_limit after its
// first call: Codex asks the gateway to compact with a compaction_trigger
// item (remote compaction needs a provider named "azure" in Codex 0.171:
// other custom providers compact on the client; 0.171 no longer calls
// /v1/responses/compact). The compaction succeeds, Codex sends the
// compaction item in place of the history, the model reads its summary
// there, and the session goes on to its final answer.
func TestCodexCLICompacts(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, map[string]string{"API_KEY": "sk-codex"}, compactingModel(t))
	proxy := recordBodies(t, s.URL)
	work := t.TempDir()
	config := `model = "claude-sonnet-4.6"
model_provider = "cursor2api"
check_for_update_on_startup = false
model_auto_compact_token_limit = 200

[analytics]
enabled = false

[model_providers.cursor2api]
name = "azure"
base_url = "` + proxy.URL + `/v1"
wire_api = "responses"
env_key = "CURSOR2API_KEY"
supports_websockets = false
`
	out := string(runCodexConfig(t, bin, config, work, "Create out.txt saying 'made by codex'."))
	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Codex did not run the call:\n%s", out)
	assert.Equal(t, "made by codex", string(made))
	assert.Contains(t, out, "context compacted", out)
	assert.NotContains(t, out, "compaction output item", out)
	assert.Contains(t, out, "Finished after the compaction.", "the session goes on to its final answer after the compaction:\n%s", out)

	// What Codex sent: the whole history ending with a compaction_trigger,
	// then the input with the compaction item in place of the history.
	bodies := proxy.bodies()
	require.Len(t, bodies, 3, out)
	input := gjson.Get(bodies[1], "input").Array()
	require.NotEmpty(t, input)
	assert.Equal(t, "compaction_trigger", input[len(input)-1].Get("type").String())
	assert.Contains(t, bodies[1], `"function_call"`, "the whole history is compacted")
	var kinds []string
	for _, it := range gjson.Get(bodies[2], "input").Array() {
		kinds = append(kinds, it.Get("type").String())
	}
	assert.Contains(t, kinds, "compaction", "Codex sends the compaction item back")
	assert.NotContains(t, kinds, "function_call", "in place of the history")

	// What the model read.
	reqs := s.up.Requests()
	require.Len(t, reqs, 3, out)
	texts := make([]string, len(reqs))
	for i, r := range reqs {
		var all strings.Builder
		for _, m := range r.Messages {
			all.WriteString(m.Role + ": " + m.Text + "\n")
		}
		texts[i] = all.String()
	}
	assert.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-1].Text, "handoff summary", "the gateway asks its model for the summary")
	assert.Contains(t, texts[1], "I called the function exec_command", "of the whole history")
	assert.Contains(t, texts[2], "compacted into the summary below", "after it, the compaction item is opened")
	assert.Contains(t, texts[2], codexCompactSummary, "and the model reads the summary")
	assert.NotContains(t, texts[2], "exec_command with", "in place of the history")
	assert.Contains(t, texts[2], "Create out.txt saying 'made by codex'.", "beside the user's own messages")

	s.Close() // Codex may exit before its last access line is written
	logs := s.logs.String()
	assert.Equal(t, 3, strings.Count(logs, "door=responses"), logs)
	assert.NotContains(t, logs, "status=4", logs)
}

// bodyRecorder is a reverse proxy to the gateway that keeps the body of
// every POST /v1/responses it passes on.
type bodyRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func (r *bodyRecorder) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func recordBodies(t *testing.T, target string) *bodyRecorder {
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	r := &bodyRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/v1/responses" {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			r.seen = append(r.seen, string(body))
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

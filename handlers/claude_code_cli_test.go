package handlers

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// TestClaudeCodeCLIRunsToolCalls proves that the real Claude Code (claude -p)
// runs the Bash and Write calls of one turn and gets the last answer: the
// files on disk show the calls ran, the access log that nothing was refused.
func TestClaudeCodeCLIRunsToolCalls(t *testing.T) {
	bin := claudeBinary(t)
	work := t.TempDir()
	notes := filepath.Join(work, "notes.md")
	s := newStack(t, nil, script(t,
		[]string{"I'll create both files.\nTRIGGER\n",
			`<invoke name="Bash">{"command": "printf 'made by claude' > out.txt", "description": "Create out.txt"}</invoke>` + "\n",
			`<invoke name="Write">{"file_path": "` + notes + `", "content": "# Notes\n<b>bold</b> & done\n"}</invoke>`},
		[]string{"Created out.txt and notes.md."},
	))
	out := runClaude(t, bin, s.URL, work, "Create out.txt and notes.md.", "Bash,Write")

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

// TestClaudeCodeCLIReadsThenEdits runs a three-turn session: the model
// reads a file, edits it (Claude Code refuses an Edit of a file it has not
// read, so the Read's result must have come back as its own), and
// answers.
func TestClaudeCodeCLIReadsThenEdits(t *testing.T) {
	bin := claudeBinary(t)
	work := t.TempDir()
	main := filepath.Join(work, "main.go")
	require.NoError(t, os.WriteFile(main, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644))
	s := newStack(t, nil, script(t,
		[]string{"Reading.\nTRIGGER\n", `<invoke name="Read">{"file_path": "` + main + `"}</invoke>`},
		[]string{"Now editing.\nTRIGGER\n", `<invoke name="Edit">{"file_path": "` + main + `", "old_string": "println(\"hi\")", "new_string": "println(\"bye\")"}</invoke>`},
		[]string{"Done: main.go says bye."},
	))
	out := runClaude(t, bin, s.URL, work, "Make main.go say bye.", "Read,Edit")

	got, err := os.ReadFile(main)
	require.NoError(t, err)
	assert.Equal(t, "package main\n\nfunc main() { println(\"bye\") }\n", string(got), "Claude Code made the edit: %s", out)
	assert.Equal(t, "Done: main.go says bye.", gjson.GetBytes(out, "result").String(), "%s", out)
	assert.NotContains(t, s.logs.String(), "status=4")
	reqs := s.up.Requests()
	require.Equal(t, 3, len(reqs), "one upstream request a turn: %s", out)
	last := reqs[2].Messages[len(reqs[2].Messages)-1].Text
	assert.Contains(t, last, `name="Edit"`, "the Edit's result is the last thing the model reads")
	var replay strings.Builder
	for _, m := range reqs[2].Messages {
		replay.WriteString(m.Text)
	}
	assert.Contains(t, replay.String(), `func main() { println("hi") }`, "the Read's result, the file, stays in the history")
}

func claudeBinary(t *testing.T) string {
	return agentBinary(t, "CLAUDE_BIN", "claude", "@anthropic-ai/claude-code@2.1.332")
}

// runClaude runs claude -p with prompt in work against the gateway at url,
// allowing the tools named, and returns its JSON result.
func runClaude(t *testing.T, bin, url, work, prompt, allowed string) []byte {
	t.Helper()
	return runClaudeWith(t, bin, url, work, prompt, allowed, nil)
}

// runClaudeWith is runClaude with more arguments and environment.
func runClaudeWith(t *testing.T, bin, url, work, prompt, allowed string, args []string, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-p", prompt, "--output-format", "json", "--allowedTools", allowed}, args...)...)
	cmd.Dir = work
	cmd.Env = offlineEnv(append([]string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-claude",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}, env...)...)
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 10 * time.Second // a child left holding its output cannot hold the test
	out, err := cmd.Output()
	require.NoError(t, err, "claude -p: %s", out)
	return out
}

// TestClaudeCodeCLIToolSearch runs the real Claude Code with
// ENABLE_TOOL_SEARCH=true and an MCP server (@modelcontextprotocol/server-
// everything over stdio). Claude Code sends its ToolSearch tool and a
// deferred DeferredToolPlaceholder, and names the MCP tools only in its
// system text. The model searches; Claude Code runs the search itself and
// answers with a tool_reference, sending the found tool deferred from then
// on; the model calls it, Claude Code runs it on the MCP server, and its
// result reaches the model. The placeholder and the unsearched tools never
// reach the upstream's prompt.
func TestClaudeCodeCLIToolSearch(t *testing.T) {
	bin := claudeBinary(t)
	mcp := everythingConfig(t)
	const loaded = `<function name="mcp__everything__echo">`
	// The model's part, by what its prompt says rather than by request
	// number: search, then call what the search loaded, then answer.
	s := newStack(t, nil, func(_ int, req cursortest.Request) cursortest.Response {
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Text + "\n")
		}
		p, trigger := prompt.String(), sentTrigger(req)
		var deltas []string
		switch {
		case !strings.Contains(p, `<function name="ToolSearch">`):
			deltas = []string{"ok"} // not the agent's loop
		case strings.Contains(p, "Echo: hello deferred"):
			deltas = []string{"The echo said: hello deferred."}
		case strings.Contains(p, loaded):
			deltas = []string{trigger + "\n", `<invoke name="mcp__everything__echo">{"message": "hello deferred"}</invoke>`}
		default:
			deltas = []string{"Searching.\n" + trigger + "\n", `<invoke name="ToolSearch">{"query": "select:mcp__everything__echo", "max_results": 5}</invoke>`}
		}
		return cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, deltas)}
	})
	out := runClaudeWith(t, bin, s.URL, t.TempDir(), "Echo 'hello deferred' with the everything server's echo tool.", "mcp__everything__echo",
		[]string{"--mcp-config", mcp, "--strict-mcp-config"}, "ENABLE_TOOL_SEARCH=true")

	result := gjson.ParseBytes(out)
	assert.Equal(t, "The echo said: hello deferred.", result.Get("result").String(), "%s", out)
	assert.False(t, result.Get("is_error").Bool(), "%s", out)
	assert.NotContains(t, s.logs.String(), "status=4", "Claude Code's requests are all taken as they are")

	var agent []string // the prompts of the agent's loop
	for _, req := range s.up.Requests() {
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Role + ": " + m.Text + "\n")
		}
		if strings.Contains(prompt.String(), `<function name="ToolSearch">`) {
			agent = append(agent, prompt.String())
		}
	}
	require.Len(t, agent, 3, "search, call, answer: %s", out)
	for i, p := range agent {
		assert.NotContains(t, p, "DeferredToolPlaceholder", "request %d: the placeholder is never offered", i)
		assert.NotContains(t, p, `<function name="mcp__everything__get-sum">`, "request %d: an unsearched tool is never offered", i)
		assert.NotContains(t, p, "tool_reference", "request %d", i)
	}
	assert.Contains(t, agent[0], "mcp__everything__get-sum", "Claude Code names its deferred tools in its own text")
	assert.NotContains(t, agent[0], loaded, "before the search the MCP tool is not offered")
	assert.Contains(t, agent[1], loaded, "after the search it is")
	assert.Contains(t, agent[1], "Tool mcp__everything__echo is loaded", "the reference in words")
	assert.Contains(t, agent[2], loaded)
	assert.Contains(t, agent[2], "Echo: hello deferred", "the MCP tool's result reaches the model")
}

// everythingConfig is Claude Code's --mcp-config for the MCP project's
// reference server over stdio; the test skips without it or node.
func everythingConfig(t *testing.T) string {
	t.Helper()
	node, js := everythingCommand(t)
	mcp, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{js, "stdio"}}}})
	require.NoError(t, err)
	return string(mcp)
}

// everythingCommand is the node and script that run the MCP project's
// reference server (@modelcontextprotocol/server-everything); the test
// skips without them.
func everythingCommand(t *testing.T) (node, js string) {
	t.Helper()
	js = os.Getenv("MCP_EVERYTHING_JS")
	if js == "" {
		t.Skip("SKIPPED: MCP_EVERYTHING_JS is not set: @modelcontextprotocol/server-everything is not installed (.ci/run installs it)")
	}
	return nodeBinary(t), js
}

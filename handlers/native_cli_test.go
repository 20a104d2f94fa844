package handlers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// The real Claude Code and Codex CLIs on BACKEND=cursor against the fake
// native backend: a session that reads a file, edits it and answers. Each
// runs twice: with parked turns (results resume the upstream run) and with
// CURSOR_PARK_MAX=0 (results are replayed in a fresh run).

// agentStep is one tool call of a fake model's session, with the text it
// says before it.
type agentStep struct {
	say  string
	call nativetest.Call
}

// agentModel is a fake model for an agent's session: its tool calls in
// order, then its final answer. A run skips as many calls as its history
// holds results, so a replayed run goes on where the session stands.
func agentModel(steps []agentStep, final string) func(*agentv1.AgentRunRequest) nativetest.Script {
	return func(req *agentv1.AgentRunRequest) nativetest.Script {
		var script []nativetest.Step
		for _, s := range steps[min(len(historyResults(req)), len(steps)):] {
			script = append(script, nativetest.Text(s.say), nativetest.ToolCalls(s.call))
		}
		script = append(script, nativetest.Text(final))
		return nativetest.Script{Steps: script, Usage: nativetest.Usage{Input: 200, Output: 20}}
	}
}

// toolResult is a tool result the upstream received: as an exec's answer
// in a run, or in a replayed run's history.
type toolResult struct {
	tool, text string
}

// historyResults are the tool results in a run's conversation_history.
func historyResults(req *agentv1.AgentRunRequest) []toolResult {
	out := []toolResult{}
	for _, m := range req.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages() {
		tm := m.GetTool()
		if tm == nil {
			continue
		}
		var text strings.Builder
		for _, c := range tm.GetContent() {
			text.WriteString(c.GetText().GetText())
		}
		out = append(out, toolResult{tm.GetToolName(), text.String()})
	}
	return out
}

// mcpResults are the answers to a run's mcp_args execs (its tool calls);
// an exec left unanswered (its run ended first) has none.
func mcpResults(t *testing.T, run nativetest.Run) []toolResult {
	t.Helper()
	var out []toolResult
	for _, e := range run.Execs {
		if e.Kind != "mcp_args" || e.Outcome == "" {
			continue
		}
		assert.Equal(t, "mcp_result.success", e.Outcome, "call %s", e.CallID)
		assert.True(t, e.Closed, "the gateway closed exec %d", e.ID)
		out = append(out, toolResult{e.Name, e.Text})
	}
	return out
}

// declaredTools are the names of the MCP tools a run declared.
func declaredTools(run nativetest.Run) []string {
	var out []string
	for _, d := range run.Request.GetMcpTools().GetMcpTools() {
		out = append(out, d.GetToolName())
	}
	return out
}

// parkModes are the two ways a tool result reaches the upstream.
var parkModes = []struct {
	name    string
	env     map[string]string
	resumed bool
}{
	{"resumed", nil, true},
	{"replayed", map[string]string{"CURSOR_PARK_MAX": "0"}, false},
}

// checkSession asserts how the session's runs went: one run the results
// resumed, or one fresh run per request whose history carries the results
// so far. It returns every tool result the upstream received, in order.
func checkSession(t *testing.T, up *nativetest.Server, resumed bool, calls int, out []byte) []toolResult {
	t.Helper()
	runs := up.Runs()
	if resumed {
		require.Len(t, runs, 1, "every result resumed the parked run:\n%s", out)
		got := mcpResults(t, runs[0])
		require.Len(t, got, calls, "the run asked for every call:\n%s", out)
		return got
	}
	require.Len(t, runs, calls+1, "a fresh run per request:\n%s", out)
	for i, run := range runs {
		require.Len(t, historyResults(run.Request), i, "run %d replays the results so far", i)
		if i > 0 {
			assert.Equal(t, historyResults(runs[i-1].Request), historyResults(run.Request)[:i-1], "run %d keeps the earlier results", i)
			// The previous run's call was answered in this run's history.
			assert.Empty(t, mcpResults(t, runs[i-1]), "run %d got no result itself", i-1)
		}
	}
	return historyResults(runs[calls].Request)
}

// TestClaudeCodeCLIReadsThenEditsNative: Claude Code reads main.go, then
// edits it (it refuses an Edit of a file it has not read, so the finished
// edit shows the Read's result came back as its own), and answers.
func TestClaudeCodeCLIReadsThenEditsNative(t *testing.T) {
	bin := claudeBinary(t)
	for _, mode := range parkModes {
		t.Run(mode.name, func(t *testing.T) {
			work := t.TempDir()
			main := filepath.Join(work, "main.go")
			require.NoError(t, os.WriteFile(main, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644))
			s, up := newNativeStackEnv(t, mode.env, agentModel([]agentStep{
				{"Reading main.go.", nativetest.Call{Tool: "Read", Args: map[string]any{"file_path": main}}},
				{"Now editing.", nativetest.Call{Tool: "Edit", Args: map[string]any{
					"file_path": main, "old_string": `println("hi")`, "new_string": `println("bye")`}}},
			}, "Done: main.go says bye."))
			out := runClaude(t, bin, s.URL, work, "Make main.go say bye.", "Read,Edit")

			got, err := os.ReadFile(main)
			require.NoError(t, err)
			assert.Equal(t, "package main\n\nfunc main() { println(\"bye\") }\n", string(got), "Claude Code made the edit: %s", out)
			assert.Equal(t, "Done: main.go says bye.", gjson.GetBytes(out, "result").String(), "%s", out)
			assert.False(t, gjson.GetBytes(out, "is_error").Bool(), "%s", out)
			assert.NotContains(t, s.logs.String(), "status=4", "none of Claude Code's requests was refused")
			assert.NotContains(t, s.logs.String(), "status=5")

			runs := up.Runs()
			require.NotEmpty(t, runs)
			assert.Contains(t, runs[0].UserText(), "Make main.go say bye.", "the prompt is in the run's user message")
			assert.Subset(t, declaredTools(runs[0]), []string{"Read", "Edit"}, "Claude Code's tools are declared as MCP tools")
			results := checkSession(t, up, mode.resumed, 2, out)
			assert.Equal(t, "cursor2api-Read", results[0].tool)
			assert.Contains(t, results[0].text, `func main() { println("hi") }`, "the Read's result is the file")
			assert.Equal(t, "cursor2api-Edit", results[1].tool)
			assert.Contains(t, results[1].text, "main.go", "the Edit's result")
		})
	}
}

// TestCodexCLIReadsThenPatchesNative: Codex reads greet.txt with
// exec_command, then changes it with apply_patch (a custom tool, its
// input the patch), and answers.
func TestCodexCLIReadsThenPatchesNative(t *testing.T) {
	bin := codexBinary(t)
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(catalog, []byte(codexCatalog), 0o600))
	patch := "*** Begin Patch\n*** Update File: greet.txt\n@@\n-hello\n+hello, <patched> & \"quoted\"\n*** End Patch"
	for _, mode := range parkModes {
		t.Run(mode.name, func(t *testing.T) {
			work := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\n"), 0o644))
			s, up := newNativeStackEnv(t, mode.env, agentModel([]agentStep{
				{"Reading greet.txt.", nativetest.Call{Tool: "exec_command", Args: map[string]any{"cmd": "cat greet.txt", "login": false}}},
				{"Patching it.", nativetest.Call{Tool: "apply_patch", Args: map[string]any{"input": patch}}},
			}, "Patched greet.txt."))
			out := runCodex(t, bin, s.URL, work, `model_catalog_json = "`+catalog+`"`, "Change greet.txt.")

			got, err := os.ReadFile(filepath.Join(work, "greet.txt"))
			require.NoError(t, err)
			assert.Equal(t, "hello, <patched> & \"quoted\"\n", string(got), "Codex applied the patch:\n%s", out)
			assert.Contains(t, string(out), "Patched greet.txt.", "Codex prints the model's last answer")
			s.Close() // Codex may exit before its last request's access line is written: Close waits for the handlers
			logs := s.logs.String()
			assert.Equal(t, 3, strings.Count(logs, "door=responses"), logs)
			assert.NotContains(t, logs, "status=4", "none of Codex's requests was refused")
			assert.NotContains(t, logs, "status=5")

			runs := up.Runs()
			require.NotEmpty(t, runs)
			assert.Equal(t, "Change greet.txt.", runs[0].UserText(), "the prompt is the run's user message")
			assert.Subset(t, declaredTools(runs[0]), []string{"exec_command", "apply_patch"}, "Codex's tools are declared as MCP tools")
			results := checkSession(t, up, mode.resumed, 2, out)
			assert.Equal(t, "cursor2api-exec_command", results[0].tool)
			assert.Contains(t, results[0].text, "hello", "the command's output is the file")
			assert.Equal(t, "cursor2api-apply_patch", results[1].tool)
		})
	}
}

// TestClaudeCodeCLIToolSearchNative is TestClaudeCodeCLIToolSearch on
// BACKEND=cursor: the first run is given ToolSearch and no placeholder or
// MCP tool; the search's result starts a run that is given the echo tool
// too, whose call Claude Code runs on the MCP server, and the result
// reaches the model.
func TestClaudeCodeCLIToolSearchNative(t *testing.T) {
	bin := claudeBinary(t)
	mcp := everythingConfig(t)
	for _, mode := range parkModes {
		t.Run(mode.name, func(t *testing.T) {
			s, up := newNativeStackEnv(t, mode.env, func(req *agentv1.AgentRunRequest) nativetest.Script {
				final := nativetest.TextFunc(func(rs []nativetest.ExecResult) string {
					seen := historyResults(req)
					for _, r := range rs {
						seen = append(seen, toolResult{r.Name, r.Text})
					}
					for _, r := range seen {
						if strings.Contains(r.text, "Echo: hello deferred") {
							return "The echo said: hello deferred."
						}
					}
					return "no echo came back"
				})
				declared := declaredTools(nativetest.Run{Request: req})
				switch {
				case !slices.Contains(declared, "ToolSearch"):
					return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("ok")}} // not the agent's loop
				case strings.Contains(fmt.Sprint(historyResults(req)), "Echo: hello deferred"):
					return nativetest.Script{Steps: []nativetest.Step{final}}
				case slices.Contains(declared, "mcp__everything__echo"):
					return nativetest.Script{Steps: []nativetest.Step{
						nativetest.ToolCalls(nativetest.Call{Tool: "mcp__everything__echo", Args: map[string]any{"message": "hello deferred"}}), final}}
				}
				return nativetest.Script{Steps: []nativetest.Step{
					nativetest.ToolCalls(nativetest.Call{Tool: "ToolSearch", Args: map[string]any{"query": "select:mcp__everything__echo", "max_results": 5}}),
					nativetest.Text("searched, and nothing was loaded")}}
			})
			out := runClaudeWith(t, bin, s.URL, t.TempDir(), "Echo 'hello deferred' with the everything server's echo tool.", "mcp__everything__echo",
				[]string{"--mcp-config", mcp, "--strict-mcp-config"}, "ENABLE_TOOL_SEARCH=true")
			result := gjson.ParseBytes(out)
			assert.Equal(t, "The echo said: hello deferred.", result.Get("result").String(), "%s", out)
			assert.NotContains(t, s.logs.String(), "status=4")

			var agent []nativetest.Run
			for _, run := range up.Runs() {
				if slices.Contains(declaredTools(run), "ToolSearch") {
					agent = append(agent, run)
				}
			}
			require.NotEmpty(t, agent, "%s", out)
			for i, run := range agent {
				assert.NotContains(t, declaredTools(run), "DeferredToolPlaceholder", "run %d", i)
				assert.NotContains(t, declaredTools(run), "mcp__everything__get-sum", "run %d: an unsearched tool is never given", i)
			}
			assert.NotContains(t, declaredTools(agent[0]), "mcp__everything__echo", "before the search")
			last := agent[len(agent)-1]
			assert.Contains(t, declaredTools(last), "mcp__everything__echo", "after it")
			assert.Contains(t, fmt.Sprint(historyResults(last.Request)), "Tool mcp__everything__echo is loaded", "the reference in words")
		})
	}
}

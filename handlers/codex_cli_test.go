package handlers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentBinary is the real agent CLI named by the environment variable
// envVar (.ci/run installs the npm package and sets it), else name on
// PATH; the test skips without either, saying how to get one.
func agentBinary(t *testing.T, envVar, name, pkg string) string {
	t.Helper()
	if bin := os.Getenv(envVar); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	t.Skipf("SKIPPED: no %s (set %s, or npm install %s); .ci/run installs it", name, envVar, pkg)
	return ""
}

// offlineEnv is the environment of an agent CLI under test, with extra
// set: whatever it sends elsewhere than the gateway on loopback goes to a
// closed loopback port, so the test never leaves the machine.
func offlineEnv(extra ...string) []string {
	env := append(os.Environ(), "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9",
		"ALL_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
	return append(env, extra...)
}

func codexBinary(t *testing.T) string {
	return agentBinary(t, "CODEX_BIN", "codex", "@openai/codex@0.171.0")
}

// TestCodexCLIRunsAToolCall proves the real Codex CLI (codex exec) runs the
// model's exec_command call and prints its last answer; the file the
// command writes shows the call reached Codex in a shape it runs.
func TestCodexCLIRunsAToolCall(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, nil, script(t,
		[]string{"I'll create the file.\nTRIGGER\n", `<invoke name="exec_command">{"cmd": "printf 'made by codex' > out.txt", "login": false}</invoke>`},
		[]string{"Created out.txt."},
	))
	work := t.TempDir()
	out := runCodex(t, bin, s.URL, work, "", "Create out.txt saying 'made by codex'.")

	made, err := os.ReadFile(filepath.Join(work, "out.txt"))
	require.NoError(t, err, "Codex did not run the call:\n%s", out)
	assert.Equal(t, "made by codex", string(made))
	assert.Contains(t, string(out), "Created out.txt.", "Codex prints the model's last answer")

	reqs := s.up.Requests()
	require.Equal(t, 2, len(reqs), "one upstream request a turn:\n%s", out)
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
	s.Close() // Codex may exit before its last request's access line is written: Close waits for the handlers
	logs := s.logs.String()
	assert.Equal(t, 2, strings.Count(logs, "door=responses"), logs)
	assert.NotContains(t, logs, "status=4", logs)
}

// runCodex runs codex exec in work with prompt against the gateway at url,
// with extra lines of config.toml, and returns what it printed.
func runCodex(t *testing.T, bin, url, work, extra, prompt string, flags ...string) []byte {
	t.Helper()
	config := `model = "claude-sonnet-4.6"
model_provider = "cursor2api"
check_for_update_on_startup = false
` + extra + `
[analytics]
enabled = false

[model_providers.cursor2api]
name = "cursor2api"
base_url = "` + url + `/v1"
wire_api = "responses"
env_key = "CURSOR2API_KEY"
`
	return runCodexConfig(t, bin, config, work, prompt, flags...)
}

// codexCatalog describes claude-sonnet-4.6 to Codex (model_catalog_json)
// with freeform apply_patch, as its catalog does for the GPT-5 family.
const codexCatalog = `{"models":[{"slug":"claude-sonnet-4.6","display_name":"Claude Sonnet 4.6",
  "apply_patch_tool_type":"freeform","supported_reasoning_levels":[],"shell_type":"default",
  "visibility":"list","supported_in_api":true,"priority":0,"support_verbosity":false,
  "truncation_policy":{"mode":"tokens","limit":10000},"experimental_supported_tools":[],
  "base_instructions":"You are Codex, a coding agent. Edit files with the apply_patch tool."}]}`

// TestCodexCLIAppliesAPatch has Codex offer apply_patch as a custom tool
// with its Lark grammar; the model writes the patch bare, as Codex's
// description of the tool asks, and Codex applies the custom_tool_call
// the gateway returns to a file on disk.
func TestCodexCLIAppliesAPatch(t *testing.T) {
	bin := codexBinary(t)
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "greet.txt"), []byte("hello\n"), 0o644))
	patch := "*** Begin Patch\n*** Update File: greet.txt\n@@\n-hello\n+hello, <patched> & \"quoted\"\n*** End Patch"
	s := newStack(t, nil, script(t,
		[]string{"Patching greet.txt.\nTRIGGER\n", "<invoke name=\"apply_patch\">\n" + patch[:40], patch[40:] + "\n</invoke>"},
		[]string{"Patched greet.txt."},
	))
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(catalog, []byte(codexCatalog), 0o600))
	out := runCodex(t, bin, s.URL, work, `model_catalog_json = "`+catalog+`"`, "Change greet.txt.")

	got, err := os.ReadFile(filepath.Join(work, "greet.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello, <patched> & \"quoted\"\n", string(got), "Codex applied the patch:\n%s", out)
	assert.Contains(t, string(out), "Patched greet.txt.")

	reqs := s.up.Requests()
	require.Equal(t, 2, len(reqs), "one upstream request a turn:\n%s", out)
	system := reqs[0].Messages[0].Text
	assert.Contains(t, system, `<function name="apply_patch">`, "Codex offers apply_patch")
	assert.Contains(t, system, "lark grammar", "as a custom tool with its grammar")
	var replay strings.Builder
	for _, m := range reqs[1].Messages {
		replay.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, replay.String(), `<invoke name="apply_patch">{"input":"*** Begin Patch`, "Codex sends the custom call back")
	assert.NotContains(t, s.logs.String(), "(custom)", "nothing is dropped")
}

// TestCodexCLIRoutesANamespacedCall has the model call a function of a
// namespace tool (Codex's multi_agent_v1): the gateway names the call back
// into its namespace, and Codex routes it to that tool, whose own answer
// (about the agent id, not an unknown tool) comes back as the result.
func TestCodexCLIRoutesANamespacedCall(t *testing.T) {
	bin := codexBinary(t)
	s := newStack(t, nil, script(t,
		[]string{"Closing it.\nTRIGGER\n", `<invoke name="multi_agent_v1__close_agent">{"target": "nobody"}</invoke>`},
		[]string{"Closed."},
	))
	out := runCodex(t, bin, s.URL, t.TempDir(), "", "Close the agent called nobody.")
	reqs := s.up.Requests()
	require.Equal(t, 2, len(reqs), "one upstream request a turn:\n%s", out)
	result := reqs[1].Messages[len(reqs[1].Messages)-1].Text
	assert.Contains(t, result, `name="multi_agent_v1__close_agent"`, "%s", out)
	assert.Contains(t, result, "invalid agent id nobody", "Codex's close_agent itself answered:\n%s", out)
}

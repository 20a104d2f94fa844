package handlers

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// TestCodexCLIToolSearch runs the real Codex 0.171 with an MCP server
// (@modelcontextprotocol/server-everything over stdio). For a model it
// knows to search (gpt-5.5, or one a catalog marks supports_search_tool)
// Codex offers no MCP tool, only tool_search with execution "client". The
// model calls it; the gateway returns a tool_search_call, Codex runs the
// search and sends a tool_search_output holding the server's namespace;
// the tools in it are offered from then on, the model calls echo, Codex
// runs it on the MCP server, and its result reaches the model. Without
// tool_search the MCP tools were out of the model's reach.
func TestCodexCLIToolSearch(t *testing.T) {
	bin := codexBinary(t)
	server := everythingServer(t)
	cases := []struct {
		name, model string
		config      func(url string) string
	}{
		{
			// Codex's first setup, over the Responses WebSocket.
			name: "openai_base_url", model: "gpt-5.5",
			config: func(url string) string {
				return "model = \"gpt-5.5\"\nopenai_base_url = \"" + url + "/v1\"\n"
			},
		},
		{
			// A custom provider over HTTP, the model described by a catalog.
			name: "custom provider and catalog", model: "claude-sonnet-4.6",
			config: func(url string) string {
				catalog := t.TempDir() + "/catalog.json"
				require.NoError(t, os.WriteFile(catalog, []byte(strings.Replace(codexCatalog, `"experimental_supported_tools":[]`, `"experimental_supported_tools":[],"supports_search_tool":true`, 1)), 0o600))
				return "model = \"claude-sonnet-4.6\"\nmodel_provider = \"cursor2api\"\nmodel_catalog_json = \"" + catalog + "\"\n" +
					"[model_providers.cursor2api]\nname = \"cursor2api\"\nbase_url = \"" + url + "/v1\"\nwire_api = \"responses\"\n"
			},
		},
	}
	const search, loaded = `<function name="tool_search">`, `<function name="mcp__everything__echo">`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The model's part, by what its prompt says: search, call what
			// the search loaded, then answer.
			s := newStack(t, map[string]string{"MODELS": tc.model}, func(_ int, req cursortest.Request) cursortest.Response {
				p, trigger := upstreamText(req), sentTrigger(req)
				var deltas []string
				switch {
				case !strings.Contains(p, search):
					deltas = []string{"ok"} // not the agent's loop
				case strings.Contains(p, "Echo: hello search"):
					deltas = []string{"The echo said: hello search."}
				case strings.Contains(p, loaded):
					deltas = []string{trigger + "\n", `<invoke name="mcp__everything__echo">{"message": "hello search"}</invoke>`}
				default:
					deltas = []string{"Searching.\n" + trigger + "\n", `<invoke name="tool_search">{"query": "echo message", "limit": 3}</invoke>`}
				}
				return cursortest.Response{Events: cursortest.Frames(&defaultUsage, nil, deltas)}
			})
			config := "check_for_update_on_startup = false\n" + tc.config(s.URL) + server + "[analytics]\nenabled = false\n"
			out := runCodexConfig(t, bin, config, t.TempDir(), "Echo 'hello search' with the everything server's echo tool.")
			assert.Contains(t, string(out), "The echo said: hello search.", "%s", out)
			assert.NotContains(t, string(out), "unrecognized configuration", "%s", out)
			assert.NotContains(t, s.logs.String(), "status=4", "Codex's requests are all taken as they are")

			var agent []string // the prompts of the agent's loop
			for _, req := range s.up.Requests() {
				if p := upstreamText(req); strings.Contains(p, search) {
					agent = append(agent, p)
				}
			}
			require.Len(t, agent, 3, "search, call, answer:\n%s\n%s", out, s.logs.String())
			assert.NotContains(t, agent[0], loaded, "before the search no MCP tool is offered")
			assert.Contains(t, agent[1], loaded, "after it, the tool it loaded is")
			assert.Contains(t, agent[1], "Tool mcp__everything__echo is loaded", "the output in words")
			assert.Contains(t, agent[2], loaded)
			assert.Contains(t, agent[2], "Echo: hello search", "the MCP tool's result reaches the model")
			for i, p := range agent {
				assert.NotContains(t, p, "tool_search_output", "request %d: no wire markup reaches the model", i)
			}
		})
	}
}

// everythingServer is Codex's config.toml table for the MCP project's
// reference server over stdio; the test skips without it or node.
func everythingServer(t *testing.T) string {
	t.Helper()
	node, js := everythingCommand(t)
	return "[mcp_servers.everything]\ncommand = " + strconv.Quote(node) + "\nargs = [" + strconv.Quote(js) + ", \"stdio\"]\n"
}

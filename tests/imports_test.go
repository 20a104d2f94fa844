package tests

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wiring is what the wiring (package services) may import: every part of
// the gateway but the HTTP surface. The packages that run a wired gateway
// (server, the doctor, bench) import it and what is named beside it.
var wiring = []string{
	"config", "models", "utils", "utils/toolproto", "utils/jsondec", "services/upstream", "services/chat", "services/human",
	"services/webchat", "services/vercel", "services/agentcli", "services/metrics", "services/readiness",
	"services/native", "services/native/keys", "services/native/agentv1", "services/native/agentv1/agentv1connect",
	"services/native/aiserverv1", "services/native/aiserverv1/aiserverv1connect",
	"services/cloud", "services/mcp", "services/state", "services/egress", "services/epilogue",
}

// doorKit is what handlers/door builds on: the core and what it needs to
// run an answer, the metrics it counts in, and no back door.
var doorKit = []string{"models", "utils", "utils/jsondec", "utils/toolproto", "handlers/sse", "services/upstream", "services/chat",
	"services/epilogue", "services/metrics", "services/readiness"}

// with returns rules and more, as a new slice.
func with(rules []string, more ...string) []string {
	return append(append([]string(nil), rules...), more...)
}

// importRules says which project packages each package may depend on,
// directly or not (go list -deps). Every package of the module must be
// listed: a new door or back door states its place here.
var importRules = map[string][]string{
	// models and utils are the leaves every layer shares: neither
	// imports anything of the project.
	"models":            nil,
	"config":            nil,
	"utils":             nil,
	"utils/toolproto":   {"models", "utils"},
	"utils/gobuild":     nil,
	"utils/jsondec":     {"utils"},
	"services/upstream": {"models"},
	// What back doors leave for after the answer: apart from the
	// back-door contract, so that the doors name no back-door package.
	"services/epilogue": nil,
	// The core: no wire format, no back door, no configuration.
	"services/chat":    {"models", "utils", "utils/toolproto", "services/upstream"},
	"services/human":   {"utils"},
	"services/webchat": {"models", "utils", "services/upstream", "services/epilogue", "services/human", "services/vercel", "services/egress"},
	// PROXY_URL's pool of outbound proxies, for every back door.
	"services/egress":     nil,
	"services/vercel":     {"utils"},
	"services/cursortest": nil,
	// The Cursor Agent CLI back door, and its fake for tests.
	"services/agentcli":              {"models", "utils", "services/upstream"},
	"services/agentcli/agentclitest": {"utils/gobuild"},
	// The generated protobuf and Connect code of Cursor's native agent API.
	"services/native/aiserverv1":                   nil,
	"services/native/aiserverv1/aiserverv1connect": {"services/native/aiserverv1"},
	"services/native/agentv1":                      {"services/native/aiserverv1"},
	"services/native/agentv1/agentv1connect":       {"services/native/agentv1", "services/native/aiserverv1"},
	// The fake native backend for tests speaks the generated code only
	// (and keeps its calls in cursortest's Recorder).
	"services/native/nativetest": {"services/cursortest", "services/native/agentv1", "services/native/aiserverv1", "services/native/agentv1/agentv1connect", "services/native/aiserverv1/aiserverv1connect"},
	// Cursor's native agent API back door.
	"services/native": {"models", "utils", "services/upstream", "services/epilogue", "services/native/keys", "services/state", "services/native/agentv1", "services/native/agentv1/agentv1connect", "services/native/aiserverv1", "services/native/aiserverv1/aiserverv1connect"},
	// The native back door's pool of Cursor API keys: no wire format; its
	// rests shared through the state store's interface.
	"services/native/keys": {"models", "utils", "services/state"},
	// The gateway's state (responses, usage) behind one interface, three
	// engines; and a real redis-server for tests.
	"services/state":           {"utils"},
	"services/state/redistest": nil,
	"services/usage":           {"utils", "services/state"},
	// The client keys (API_KEY, API_KEYS_FILE) and their limits: no wire
	// format; counters shared through the state store.
	"services/clientkeys": {"utils", "services/state"},
	// Cursor's Cloud Agents client (not a chat back door: the Responses
	// door serves its runs directly), and its fake for tests.
	"services/cloud":           {"models", "utils"},
	"services/cloud/cloudtest": {"services/cursortest"},
	// The MCP bridge implements chat.ToolRunner without importing the
	// core; its test server is the official SDK's.
	"services/mcp":         {"models", "utils"},
	"services/mcp/mcptest": {"utils/gobuild"},
	// Metrics and readiness see the back door only through its contract;
	// metrics read each part through the reporter /ready reads, in its shape.
	"services/metrics":   {"models", "utils", "services/upstream", "services/readiness"},
	"services/readiness": {"models", "utils", "services/upstream"},
	// The wiring is the one place that reads config and knows every part.
	"services":     wiring,
	"handlers/sse": {"utils"},
	// What every door shares: the answer's lifecycle on the core.
	"handlers/door": doorKit,
	// A door is its wire format, its converters and its handlers.
	"handlers/openai":    with(doorKit, "handlers/door"),
	"handlers/anthropic": with(doorKit, "handlers/door"),
	"handlers/gemini":    with(doorKit, "handlers/door"),
	// The WebSocket side of a door: upgrade, bounds, pings, turns.
	"handlers/socket": with(doorKit, "handlers/door"),
	// The Responses door shares the OpenAI door's content decoding and
	// error body.
	"handlers/responses": with(doorKit, "handlers/door", "handlers/socket", "handlers/openai", "services/state"),
	// Cloud Agents behind the Responses door (not a chat back door).
	"handlers/cloudagents": with(doorKit, "handlers/door", "handlers/socket", "handlers/openai", "handlers/responses", "services/state", "services/cloud"),
	// The operator's console: pages over the ledger and /ready's report.
	"handlers/console": {"models", "utils", "services/upstream", "services/usage", "services/state", "services/readiness"},
	// The router reaches back doors only through the core.
	"handlers": with(doorKit, "handlers/door", "handlers/socket", "handlers/openai", "handlers/responses", "handlers/anthropic", "handlers/gemini", "handlers/cloudagents",
		"handlers/console", "services/state", "services/usage", "services/cloud", "services/clientkeys"),
	// Runs the gateway a configuration describes, for main and bench:
	// the one HTTP package that reads config (handlers itself never does).
	"handlers/server": with(wiring, "services", "handlers/sse", "handlers/door", "handlers/socket", "handlers/openai", "handlers/responses", "handlers/anthropic", "handlers/gemini", "handlers/cloudagents", "handlers", "handlers/console", "services/state", "services/usage", "services/clientkeys"),
	"":                nil, // main: anything
	// The Docker smoke test's fake upstream command.
	"scripts/fakeupstream": {"services/cursortest"},
	// Writes the native API's .proto sources from the SDK's schema listing.
	"scripts/nativeproto": nil,
	// The generator of the Anthropic door's packed token ranks.
	"scripts/mkcl100k": nil,
	// The doctor wires the web chat as the gateway does and runs its
	// handshake step by step.
	"services/doctor": with(wiring, "services"),
	// `cursor2api xih` runs the x-is-human check as the web chat wires it.
	"services/human/xih": with(wiring, "services"),
	// The benchmark program runs its gateway through server, as main does.
	"bench": with(wiring, "services", "services/cursortest", "handlers/server", "handlers/sse", "handlers/door", "handlers/socket", "handlers/openai", "handlers/cloudagents", "handlers/responses", "handlers/anthropic", "handlers/gemini", "handlers", "handlers/console",
		"services/state", "services/usage", "services/clientkeys", "services/native/nativetest", "services/native/agentv1", "services/native/agentv1/agentv1connect", "bench/loadgen"),
	// The out-of-process benchmark runs the gateway's binary: it only
	// borrows the fake's frames.
	"bench/e2e": {"services/cursortest", "bench/loadgen"},
	// The load both benchmarks put: nothing of the gateway.
	"bench/loadgen": nil,
	// The process-level and deployment tests (test files only).
	"tests": nil,
}

func TestImportRules(t *testing.T) {
	list := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	list.Dir = ".." // the module's root
	out, err := list.Output()
	require.NoError(t, err, "go list")
	const module = "cursor2api"
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		allowed, ok := importRules[pkg]
		if !assert.True(t, ok, "package %q has no import rule: add it to importRules and ARCHITECTURE.md", fields[0]) {
			continue
		}
		seen++
		if pkg == "" {
			continue
		}
		for _, dep := range fields[1:] {
			if dep != module && !strings.HasPrefix(dep, module+"/") {
				continue
			}
			name := strings.TrimPrefix(strings.TrimPrefix(dep, module), "/")
			assert.Contains(t, allowed, name, "%s must not depend on %s (ARCHITECTURE.md)", fields[0], dep)
		}
	}
	assert.Equal(t, len(importRules), seen, "every rule names a package that exists")
}

// TestArchitectureNamesEveryPackage keeps ARCHITECTURE.md's package
// table and its opening picture true to importRules: every package has a
// row, every row and every package the picture names exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../ARCHITECTURE.md")
	require.NoError(t, err)
	text := string(doc)
	rows := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range backticked.FindAllStringSubmatch(first, -1) {
			rows[m[1]] = true
		}
	}
	for pkg := range importRules {
		name := pkg
		switch {
		case pkg == "":
			name = "main"
		case strings.HasSuffix(pkg, "connect"):
			continue // the generated Connect packages share their messages' row
		}
		assert.True(t, rows[name], "ARCHITECTURE.md has no row for package %q", name)
	}
	for name := range rows {
		_, ok := importRules[name]
		assert.True(t, ok || name == "main", "ARCHITECTURE.md has a row for %q, which importRules does not know", name)
	}
	_, picture, ok := strings.Cut(text, "```\n")
	require.True(t, ok, "ARCHITECTURE.md opens with a picture")
	picture, _, _ = strings.Cut(picture, "```")
	assert.Less(t, strings.Count(picture, "\n"), 30, "the opening picture is under 30 lines")
	for _, name := range pictured.FindAllString(picture, -1) {
		_, ok := importRules[name]
		assert.True(t, ok, "the picture names %q, which importRules does not know", name)
	}
}

var (
	backticked = regexp.MustCompile("`([a-z0-9/]+)`")
	pictured   = regexp.MustCompile(`\b(?:handlers|services|utils)/[a-z0-9/]+[a-z0-9]`)
)

package mcp

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerEverything runs the MCP project's reference server,
// @modelcontextprotocol/server-everything from npm, over stdio. .ci/run
// installs it and sets MCP_EVERYTHING_JS to its dist/index.js; without it
// (or without node) the test skips and says so.
func TestServerEverything(t *testing.T) {
	js := os.Getenv("MCP_EVERYTHING_JS")
	if js == "" {
		t.Skip("MCP_EVERYTHING_JS is not set: @modelcontextprotocol/server-everything is not installed (.ci/run installs it)")
	}
	node := os.Getenv("NODE22_BIN")
	if node == "" {
		var err error
		if node, err = exec.LookPath("node"); err != nil {
			t.Skip("no node to run @modelcontextprotocol/server-everything")
		}
	}
	b := startBridge(t, Options{Servers: map[string]ServerConfig{"everything": {Command: node, Args: []string{js, "stdio"}}}})
	st := waitState(t, b, "everything", StateReady)
	assert.Greater(t, st.Tools, 3)
	var echo bool
	for _, tool := range b.Tools() {
		if tool.Name == "mcp__everything__echo" {
			echo = true
			assert.Contains(t, string(tool.Parameters), "message")
		}
	}
	require.True(t, echo, "server-everything has an echo tool")
	out, isErr := b.Run(context.Background(), "mcp__everything__echo", `{"message":"hello from cursor2api"}`)
	assert.False(t, isErr, out)
	assert.True(t, strings.Contains(out, "hello from cursor2api"), out)
}

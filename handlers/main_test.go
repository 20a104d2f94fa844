package handlers

import (
	"os"
	"sync"
	"testing"

	"cursor2api/services/mcp/mcptest"
)

// mcpServerBuild is the mcptest stdio server, built once for the
// package's tests (the MCP tests start dozens of gateways on it) into a
// directory TestMain removes.
var mcpServerBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// mcpServerBin returns the built mcptest stdio server.
func mcpServerBin(t *testing.T) string {
	t.Helper()
	b := &mcpServerBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "cursor2api-mcpserver-"); b.err == nil {
			b.bin, b.err = mcptest.BuildTo(b.dir)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dir := mcpServerBuild.dir; dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

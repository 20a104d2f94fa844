// Package gobuild compiles the small Go programs that tests run as child
// processes (the fake Agent CLI, the stdio MCP server) from their source
// folders, with the toolchain of the go test that runs them.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Program compiles the main package in src into dir as name and returns
// the binary's path.
func Program(src, dir, name string) (string, error) {
	// Reading the source lets go test's cache see it as an input of the
	// tests that build it: a changed program reruns them.
	if _, err := os.ReadFile(filepath.Join(src, "main.go")); err != nil {
		return "", fmt.Errorf("the program's source: %w", err)
	}
	bin := filepath.Join(dir, name)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// Package gobuild compiles the small Go programs that tests run as child
// processes (the fake Agent CLI, the stdio MCP server) from their source
// folders, with the toolchain of the go test that runs them.
package gobuild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
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

// Beside compiles the program in rel, a folder named relative to the
// source file that calls Beside, into dir as name: how a test helper
// package builds the program kept beside it, wherever the test runs.
func Beside(rel, dir, name string) (string, error) {
	_, self, _, ok := runtime.Caller(1)
	if !ok {
		return "", errors.New("cannot locate the caller's source")
	}
	return Program(filepath.Join(filepath.Dir(self), rel), dir, name)
}

// ForTest runs build in a temporary directory of t and returns the
// binary's path; a failure ends t.
func ForTest(t testing.TB, build func(dir string) (string, error)) string {
	t.Helper()
	bin, err := build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

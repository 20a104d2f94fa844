package gobuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgram(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644))
	bin, err := Program(src, t.TempDir(), "hello")
	require.NoError(t, err)
	out, err := exec.Command(bin).CombinedOutput()
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(out))

	_, err = Program(t.TempDir(), t.TempDir(), "none")
	assert.ErrorContains(t, err, "the program's source", "a folder without main.go")

	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "go.mod"), []byte("module broken\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(broken, "main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644))
	_, err = Program(broken, t.TempDir(), "broken")
	assert.ErrorContains(t, err, "undefined", "the compiler's words come with the error")
}

func TestBesideAndForTest(t *testing.T) {
	_, err := Beside("nowhere", t.TempDir(), "none")
	assert.ErrorContains(t, err, filepath.Join("utils", "gobuild", "nowhere"), "rel is read from the caller's folder")

	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	bin := ForTest(t, func(dir string) (string, error) { return Program(src, dir, "hello") })
	assert.FileExists(t, bin)
}

//go:build !unix

package agentcli

import (
	"os"
	"os/exec"
)

// ownGroup leaves cmd as it is: without process groups only the CLI
// itself is killed when its context ends.
func ownGroup(*exec.Cmd) {}

// killGroup does nothing: there is no group to kill once the process
// itself has been waited for.
func killGroup(int) error { return os.ErrProcessDone }

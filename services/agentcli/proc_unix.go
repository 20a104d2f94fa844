//go:build unix

package agentcli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd lead a process group of its own, which is killed
// whole when its context ends: the CLI is a wrapper that starts node,
// which may start tools, and none of them may outlive the request.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

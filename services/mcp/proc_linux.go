package mcp

import (
	"os/exec"
	"syscall"
)

// setGroup puts the child in a process group of its own, and has the
// kernel kill it when the gateway dies without closing it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group the child leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

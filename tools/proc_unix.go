//go:build unix

package tools

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd as the leader of a new process group, so that
// it and every child it starts can be killed at once.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills p's whole process group with SIGKILL. A group that is
// already gone is not an error.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// exitSignal names the signal that ended a process, or "".
func exitSignal(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

// openNonblock opens without waiting for a writer: a FIFO or a device in
// the workspace must not hang a tool.
const openNonblock = syscall.O_NONBLOCK

// linkCount is the number of hard links to the file fi describes, or 1
// when unknown.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

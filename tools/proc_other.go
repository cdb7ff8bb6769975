//go:build !unix

package tools

import (
	"errors"
	"os"
	"os/exec"
)

// setProcessGroup does nothing where there are no Unix process groups.
func setProcessGroup(*exec.Cmd) {}

// killGroup kills the process itself; its children may survive.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func exitSignal(*os.ProcessState) string { return "" }

const openNonblock = 0

func linkCount(os.FileInfo) uint64 { return 1 }

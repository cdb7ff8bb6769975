//go:build !linux

package sandbox

import (
	"fmt"
	"io"
)

// ABI is the kernel's Landlock ABI version: 0, Landlock is Linux's.
func ABI() int { return 0 }

// Main is the helper mode (see [ExecArg]); without Landlock it cannot
// confine anything, so it refuses to run the command.
func Main(args []string, errOut io.Writer) int {
	fmt.Fprintf(errOut, "ctxkit sandbox: %v\n", ErrUnsupported)
	return 126
}

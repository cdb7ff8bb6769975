//go:build unix

package tokens

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time the process has used. The benchmarks report
// throughput per CPU second too, because wall-clock MB/s means little on a
// machine shared with other work.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

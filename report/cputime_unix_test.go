//go:build unix

package report

import (
	"syscall"
	"time"
)

// cpuTime is this process's user and system CPU time so far: on the shared
// machine the wall time per op grows with the other work on it, the CPU
// time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

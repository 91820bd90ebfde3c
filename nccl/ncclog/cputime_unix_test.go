//go:build unix

package ncclog

import (
	"syscall"
	"time"
)

// processCPU is this process's user+system CPU time, or 0 where it cannot
// be read: on a loaded machine CPU per byte is steadier than the wall clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

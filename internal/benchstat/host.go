//go:build unix

package benchstat

import (
	"os"
	"strings"
	"syscall"
)

// Switches is the context switches, voluntary and involuntary, of who
// (syscall.RUSAGE_SELF: this process's threads; RUSAGE_CHILDREN: the
// children reaped so far); 0 if getrusage fails.
func Switches(who int) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// LoadAvg is /proc/loadavg's three load averages (the guest's, in the
// lab), or "unknown".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

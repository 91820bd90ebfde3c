//go:build linux

package doctor

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// setMemlock sets this process's RLIMIT_MEMLOCK.
func setMemlock(cur, hard uint64) error {
	return unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: cur, Max: hard})
}

// hasCapSysResource reports whether this process may raise hard limits.
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	return false
}

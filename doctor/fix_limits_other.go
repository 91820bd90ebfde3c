//go:build !linux

package doctor

import (
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// setMemlock: RLIMIT_MEMLOCK is a Linux limit; a plan made elsewhere (the
// doctor on a recording, on a laptop) is never applied here.
func setMemlock(cur, hard uint64) error {
	return fmt.Errorf("RLIMIT_MEMLOCK: %w", erdma.ErrNotLinux)
}

func hasCapSysResource() bool { return false }

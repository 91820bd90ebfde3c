//go:build !linux

package erdma

import (
	"fmt"
	"runtime"
)

// liveNetdevs: netlink is Linux's; elsewhere only a recorded host's
// network interfaces can be read.
func liveNetdevs() ([]Netdev, error) {
	return nil, fmt.Errorf("network interfaces of the live host: %w on %s (read a recorded host)", ErrNotLinux, runtime.GOOS)
}

// liveMemlock: RLIMIT_MEMLOCK is read on Linux only.
func liveMemlock() (*Limit, error) {
	return nil, fmt.Errorf("memlock limit of the live host: %w on %s (read a recorded host)", ErrNotLinux, runtime.GOOS)
}

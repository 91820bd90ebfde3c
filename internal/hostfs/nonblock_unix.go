//go:build unix

package hostfs

import "syscall"

// oNonblock makes opening a FIFO with no writer return at once.
const oNonblock = syscall.O_NONBLOCK

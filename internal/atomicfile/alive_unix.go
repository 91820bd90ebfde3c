//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// oNoFollow: the temporary name is new (O_EXCL); never follow a link there.
const oNoFollow = syscall.O_NOFOLLOW

// alive reports whether a process pid exists (signal 0; EPERM: it exists
// under another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

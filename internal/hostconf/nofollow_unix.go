//go:build unix

package hostconf

import "syscall"

const oNoFollow = syscall.O_NOFOLLOW

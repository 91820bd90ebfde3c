//go:build unix

package erdma

import (
	"os"

	"golang.org/x/sys/unix"
)

// pread0 reads from offset 0 with one pread(2) on fd (f's descriptor): a
// sysfs counter is re-read by the driver on every read at offset 0.
func pread0(_ *os.File, fd int, b []byte) (int, error) { return unix.Pread(fd, b, 0) }

//go:build linux && (amd64 || arm64)

package ncclog

import (
	"syscall"
	"unsafe"
)

const rwfNowait = 0x8 // RWF_NOWAIT, include/uapi/linux/fs.h

// readCached copies what the page cache holds of the span of p at off, by
// preadv2 with RWF_NOWAIT as a raw system call, and returns how many bytes
// it read; the caller reads the rest the usual way (pages not cached, the
// end of the file, a file system without RWF_NOWAIT). A copy out of the
// page cache cannot block, so it need not go through the Go scheduler's
// system-call path, whose monitor hands the worker's P to another thread
// whenever a call takes over 20 µs, as a 1 MiB copy does: on 2 CPUs that
// cost the scan about 6% of its wall-clock time in thread switches and idle CPU
// (docs/parse.md). A page the kernel would have to read from the disk
// fails the call with EAGAIN instead of blocking, so no raw call here
// waits for a device.
func (c *fileChunks) readCached(p []byte, off int64) int {
	if c.conn == nil || c.noNowait.Load() {
		return 0
	}
	n := 0
	c.conn.Control(func(fd uintptr) {
		for n < len(p) {
			iov := syscall.Iovec{Base: &p[n]}
			iov.SetLen(len(p) - n)
			r, _, errno := syscall.RawSyscall6(sysPreadv2, fd, uintptr(unsafe.Pointer(&iov)), 1, uintptr(off+int64(n)), 0, rwfNowait)
			switch {
			case errno == syscall.EOPNOTSUPP || errno == syscall.ENOSYS || errno == syscall.EINVAL:
				c.noNowait.Store(true) // an old kernel, or a file system without it
				return
			case errno != 0 || r == 0:
				return // EAGAIN (not cached), the end of the file, an error: ReadAt says
			}
			n += int(r)
		}
	})
	return n
}

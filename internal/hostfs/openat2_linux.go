package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func openDirFD(dir string) int {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

func closeDirFD(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

// openInRoot opens rel with openat2(RESOLVE_IN_ROOT): the kernel resolves
// every component and link with the root as "/". ok is false where openat2
// is unavailable (kernel < 5.6, a seccomp filter): the caller uses os.Root.
func (r *Root) openInRoot(rel string) (f *os.File, err error, ok bool) {
	if r.fd < 0 || r.closed {
		return nil, nil, false
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	name := clean(rel)
	for try := 0; ; try++ {
		fd, err := unix.Openat2(r.fd, name, &how)
		switch {
		case err == nil:
			// The kind is checked on the raw descriptor (Open checks
			// the other paths' files): cheaper than File.Stat, and
			// O_NONBLOCK is cleared on what is kept, so that NewFile
			// does not try to register a regular file with the poller.
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return nil, &fs.PathError{Op: "fstat", Path: r.Path(rel), Err: err}, true
			}
			if m := st.Mode & unix.S_IFMT; m != unix.S_IFREG && m != unix.S_IFDIR {
				unix.Close(fd)
				return nil, &fs.PathError{Op: "open", Path: r.Path(rel), Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(m))}, true
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY); err != nil {
				unix.Close(fd)
				return nil, &fs.PathError{Op: "fcntl", Path: r.Path(rel), Err: err}, true
			}
			return os.NewFile(uintptr(fd), r.Path(rel)), nil, true
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN) && try < 8:
			continue // a rename raced the lookup: the kernel asks to retry
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && try == 0:
			r.fd = -1 // not available here: os.Root from now on
			return nil, nil, false
		}
		return nil, &fs.PathError{Op: "openat2", Path: r.Path(rel), Err: err}, true
	}
}

// kindOf names a file type (S_IFMT bits) for messages.
func kindOf(m uint32) string {
	switch m {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "an unknown kind of file"
}

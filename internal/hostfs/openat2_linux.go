package hostfs

import (
	"errors"
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

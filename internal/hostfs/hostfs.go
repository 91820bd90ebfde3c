// Package hostfs is the one place that reads files under a host root: the
// live machine ("/") or a recorded host (a directory, or a recording
// unpacked from an archive). Every reader of a root in erdmakit goes through
// it, so that no symlink and no ".." can make a replay read this machine's
// files: under any root but "/" it resolves names with os.Root, which follows
// relative links that stay inside (sysfs is made of them:
// class/infiniband/X -> ../../devices/...) and refuses a name or link that
// leaves the root. An absolute link, or a ".." above the root, is read the
// way chroot (and openat2's RESOLVE_IN_ROOT) reads it: from the root, so a
// recorded /sys/... link names the recording's sys/..., never this
// machine's. On Linux, opening a file is one openat2(RESOLVE_IN_ROOT) call,
// the kernel enforcing the root (os.Root resolves a name one component at
// a time, several times slower for sysfs' deep paths); elsewhere, or where
// openat2 is missing, os.Root.
//
// Only regular files and directories are opened: a FIFO would block the
// open (and every command) until a writer came, and a device node would
// hand over a disk's or a terminal's bytes as an attribute. Every open is
// non-blocking and checked with fstat before anything is read.
package hostfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// ErrTooLarge is wrapped by ReadFile when a file is bigger than its bound.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by Open (and every read built on it) when a name
// is neither a regular file nor a directory: a FIFO, a device node, a
// socket. A recording holds none (record stores char devices as empty
// files); the live host's sysfs and procfs neither.
var ErrNotRegular = errors.New("neither a regular file nor a directory")

// Root reads under one directory. The zero Root is not usable; use Open
// or OpenContext. A Root is for one goroutine at a time.
type Root struct {
	dir string
	// ctx, when set (OpenContext), bounds every read.
	ctx context.Context
	// live: "/", where nothing lies outside; read directly.
	live bool
	// fd is the root directory for openat2 (Linux), -1 when not used.
	fd int

	mu     sync.Mutex
	r      *os.Root // opened when first needed (all but Open, on Linux)
	closed bool
}

// Open opens dir as a root ("" is "/"). Close it when done.
func Open(dir string) (*Root, error) {
	if dir == "" {
		dir = "/"
	}
	dir = filepath.Clean(dir)
	if dir == "/" {
		return &Root{dir: dir, live: true, fd: -1}, nil
	}
	if fd := openDirFD(dir); fd >= 0 {
		return &Root{dir: dir, fd: fd}, nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("host root %s: %w", dir, err)
	}
	return &Root{dir: dir, r: r, fd: -1}, nil
}

// OpenContext is Open with every read bound to ctx, as exec.CommandContext
// binds a command: each method fails once ctx has ended, with an error that
// names the file and wraps ctx's, and ReadFile abandons a read still in
// flight when ctx ends (a sysfs read is the driver's show(), which a wedged
// device can hold for ever; the file is closed when the read returns).
func OpenContext(ctx context.Context, dir string) (*Root, error) {
	if err := ctx.Err(); err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Clean(dir), Err: err}
	}
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	r.ctx = ctx
	return r, nil
}

// ended is the error for an operation on rel after ctx ended, else nil.
func (r *Root) ended(op, rel string) error {
	if r.ctx == nil {
		return nil
	}
	if err := r.ctx.Err(); err != nil {
		return &fs.PathError{Op: op, Path: r.Path(rel), Err: err}
	}
	return nil
}

// root is the os.Root, opened on first use.
func (r *Root) root() (*os.Root, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, &fs.PathError{Op: "open", Path: r.dir, Err: fs.ErrClosed}
	}
	if r.r == nil {
		rr, err := os.OpenRoot(r.dir)
		if err != nil {
			return nil, err
		}
		r.r = rr
	}
	return r.r, nil
}

// Close releases the root; it is idempotent.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live || r.closed {
		return nil
	}
	r.closed = true
	closeDirFD(r.fd)
	r.fd = -1
	if r.r != nil {
		return r.r.Close()
	}
	return nil
}

// Dir is the root directory.
func (r *Root) Dir() string { return r.dir }

// Path is rel under the root, for messages (never opened as such).
func (r *Root) Path(rel string) string { return filepath.Join(r.dir, clean(rel)) }

// clean makes rel relative ("/sys/x" and "sys/x" are the same file).
func clean(rel string) string {
	rel = strings.TrimLeft(filepath.ToSlash(rel), "/")
	if rel == "" {
		return "."
	}
	return rel
}

// named rewrites an error's path from the relative name to the full one.
func (r *Root) named(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = r.Path(pe.Path)
	}
	return err
}

// Open opens a regular file or a directory for reading; anything else
// (a FIFO, a device) wraps ErrNotRegular, without blocking: the open is
// non-blocking and the kind is the opened file's own (fstat), so a rename
// between a check and the open cannot slip a FIFO in.
func (r *Root) Open(rel string) (*os.File, error) {
	if err := r.ended("open", rel); err != nil {
		return nil, err
	}
	if f, err, ok := r.openInRoot(rel); ok {
		return f, err // checked there, on the raw descriptor
	}
	f, err := r.open(rel)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fstat", Path: r.Path(rel), Err: err}
	}
	if m := fi.Mode(); !m.IsRegular() && !m.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: r.Path(rel), Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(m))}
	}
	return f, nil
}

// Kind names a file type for messages ("a FIFO", "a symlink"): the one
// wording of what hostfs refuses to read and atomicfile refuses to replace.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// open opens rel non-blocking (of any kind; Open checks it) where
// openInRoot is not used.
func (r *Root) open(rel string) (*os.File, error) {
	if r.live {
		return os.OpenFile(r.Path(rel), os.O_RDONLY|oNonblock, 0)
	}
	rr, err := r.root()
	if err != nil {
		return nil, err
	}
	f, err := rr.OpenFile(clean(rel), os.O_RDONLY|oNonblock, 0)
	if r.retry(err) {
		if p, rerr := r.resolve(rr, rel, true); rerr == nil {
			f, err = rr.OpenFile(p, os.O_RDONLY|oNonblock, 0)
		}
	}
	return f, r.named(err)
}

// retry reports whether os.Root refused a name that may still be inside
// when read as chroot would (an absolute link, a ".." above the root):
// anything but "not there".
func (r *Root) retry(err error) bool {
	return err != nil && !errors.Is(err, fs.ErrNotExist)
}

// maxLinkHops bounds link resolution like the kernel's ELOOP limit.
const maxLinkHops = 40

// resolve turns rel into a name without symlinks (the last one kept when
// followLast is false), resolving links with the root as "/": an absolute
// target starts again at the root, ".." at the root stays there. Every
// step is an Lstat or Readlink through os.Root on a link-free prefix, so
// nothing outside is touched.
func (r *Root) resolve(rr *os.Root, rel string, followLast bool) (string, error) {
	p, _, err := walk(rr.Lstat, rr.Readlink, rel, followLast, nil)
	return p, err
}

// Walk resolves rel as a read does (links inside the root, absolute ones
// from the root) and calls link with the name and target of every symlink
// met on the way, a final one too when followLast is false (it is then not
// followed). It returns the resolved name and the Lstat of its last
// component, nil when the name ends in "..". The recorder uses it to
// capture every link a read meets.
func (r *Root) Walk(rel string, followLast bool, link func(name, target string)) (string, fs.FileInfo, error) {
	return walk(r.Lstat, r.Readlink, rel, followLast, link)
}

// walk is resolve's and Walk's one loop; link may be nil.
func walk(lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error),
	rel string, followLast bool, link func(name, target string)) (string, fs.FileInfo, error) {
	parts := strings.Split(clean(rel), "/")
	cur := ""
	var fi fs.FileInfo
	for hops := 0; len(parts) > 0; {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			cur, fi = parent(cur), nil
			continue
		}
		next := path.Join(cur, p)
		var err error
		if fi, err = lstat(next); err != nil {
			return "", nil, err
		}
		last := len(parts) == 0 && !followLast
		if fi.Mode()&fs.ModeSymlink == 0 || last && link == nil {
			cur = next
			continue
		}
		t, err := readlink(next)
		if err != nil {
			return "", nil, err
		}
		if link != nil {
			link(next, t)
		}
		if last {
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", nil, &fs.PathError{Op: "resolve", Path: rel, Err: errors.New("too many levels of symbolic links")}
		}
		if path.IsAbs(t) {
			cur = ""
		}
		parts = append(strings.Split(strings.Trim(t, "/"), "/"), parts...)
		fi = nil
	}
	if cur == "" {
		return ".", fi, nil
	}
	return cur, fi, nil
}

func parent(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// ReadFile reads a whole file of at most max bytes; a larger one wraps
// ErrTooLarge (so a recording cannot make a reader hold gigabytes).
func (r *Root) ReadFile(rel string, max int64) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	read := func() ([]byte, error) {
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, max+1))
	}
	var b []byte
	if r.ctx != nil {
		// The read owns f: one abandoned closes it when it returns.
		b, err = ctxio.Do(r.ctx, read)
	} else {
		b, err = read()
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: r.Path(rel), Err: err}
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", r.Path(rel), ErrTooLarge, max)
	}
	return b, nil
}

// ReadDir lists a directory, sorted by name.
func (r *Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	f, err := r.Open(rel) // checks ctx
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: r.Path(rel), Err: err}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// Readlink returns a symlink's text (not resolved: the caller resolves it
// by reading through the root).
func (r *Root) Readlink(rel string) (string, error) {
	if err := r.ended("readlink", rel); err != nil {
		return "", err
	}
	if r.live {
		return os.Readlink(r.Path(rel))
	}
	rr, err := r.root()
	if err != nil {
		return "", err
	}
	s, err := rr.Readlink(clean(rel))
	if r.retry(err) {
		if p, rerr := r.resolve(rr, rel, false); rerr == nil {
			s, err = rr.Readlink(p)
		}
	}
	return s, r.named(err)
}

// Stat follows links (inside the root).
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	if err := r.ended("stat", rel); err != nil {
		return nil, err
	}
	if r.live {
		return os.Stat(r.Path(rel))
	}
	rr, err := r.root()
	if err != nil {
		return nil, err
	}
	fi, err := rr.Stat(clean(rel))
	if r.retry(err) {
		if p, rerr := r.resolve(rr, rel, true); rerr == nil {
			fi, err = rr.Stat(p)
		}
	}
	return fi, r.named(err)
}

// Lstat does not follow a final link.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) {
	if err := r.ended("lstat", rel); err != nil {
		return nil, err
	}
	if r.live {
		return os.Lstat(r.Path(rel))
	}
	rr, err := r.root()
	if err != nil {
		return nil, err
	}
	fi, err := rr.Lstat(clean(rel))
	if r.retry(err) {
		if p, rerr := r.resolve(rr, rel, false); rerr == nil {
			fi, err = rr.Lstat(p)
		}
	}
	return fi, r.named(err)
}

// Glob returns the relative names matching pattern (path.Match syntax,
// slash-separated, relative to the root), sorted.
func (r *Root) Glob(pattern string) ([]string, error) {
	return fs.Glob(r.FS(), clean(pattern))
}

// FS is the root as an fs.FS (for fs.WalkDir, fs.Glob); names are
// slash-separated and relative. It opens through Open, so the same rules
// hold (confined, regular files and directories only).
func (r *Root) FS() fs.FS { return rootFS{r} }

// rootFS is Root as an fs.FS, fs.StatFS, fs.ReadDirFS and fs.ReadLinkFS
// (what os.Root's FS was).
type rootFS struct{ r *Root }

func (f rootFS) ReadLink(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.Readlink(name)
}

func (f rootFS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.Lstat(name)
}

func (f rootFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.Open(name)
}

func (f rootFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.Stat(name)
}

func (f rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.ReadDir(name)
}

// Rel is the name of p (a path joined under Dir) relative to the root, or
// false when p is not under it.
func (r *Root) Rel(p string) (string, bool) {
	rel, err := filepath.Rel(r.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return path.Clean(filepath.ToSlash(rel)), true
}

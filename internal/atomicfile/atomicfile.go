// Package atomicfile is the one way erdmakit writes an output file
// (recordings, the doctor's textfile, NCCL graphs, plots, raw logs): a
// reader sees the old content or the new, never a part. The content goes to
// a temporary file in the same directory, synced, then renamed over the
// target. node_exporter's textfile collector and recordings rely on it.
//
// One rule for every target: it is absent or a regular file; a symlink, a
// FIFO, a device or a directory is refused, never replaced or written
// through. A new file's mode is perm less the umask (as open(2) would make
// it); an existing file keeps its mode (a recording made 0600 stays 0600).
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// ErrNotRegular: the target exists and is not a regular file (a symlink, a
// device, a directory, a FIFO): renaming over it would destroy it, writing
// through it would write elsewhere.
var ErrNotRegular = errors.New("not a regular file")

// File is an output being written: Commit renames it over its target;
// Close without Commit removes it, leaving the target as it was.
type File struct {
	f      *os.File
	target string
	done   bool
}

// Create starts writing path (see the package rule); perm is a new file's
// mode before the umask. Temporary files of the same target left by a
// writer that was killed (kill -9, a crash) are removed first.
func Create(path string, perm fs.FileMode) (*File, error) {
	keep := fs.FileMode(0)
	fi, err := os.Lstat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return nil, fmt.Errorf("writing %s: %w (%s): refusing to replace it", path, ErrNotRegular, hostfs.Kind(fi.Mode()))
	case err == nil:
		keep = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	host := hostTag()
	RemoveStale(path)
	var f *os.File
	for try := 0; ; try++ {
		name := filepath.Join(dir, tempPrefix(base)+host+"-"+strconv.Itoa(os.Getpid())+"-"+randomSuffix())
		// O_EXCL and perm: the kernel applies the umask, as it would to
		// the target itself.
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) || try > 8 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if keep != 0 {
		if err := f.Chmod(keep); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return &File{f: f, target: path}, nil
}

// Write implements io.Writer.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Name is the temporary file's name (where the content is until Commit).
func (f *File) Name() string { return f.f.Name() }

// Commit syncs the content and renames it over the target.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("writing %s: %w", f.target, os.ErrClosed)
	}
	f.done = true
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The target may have become a link or a FIFO since Create: the
		// rename would replace it, which the rule forbids.
		if fi, lerr := os.Lstat(f.target); lerr == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%w (%s): refusing to replace it", ErrNotRegular, hostfs.Kind(fi.Mode()))
		}
	}
	if err == nil {
		err = os.Rename(f.f.Name(), f.target)
	}
	if err != nil {
		os.Remove(f.f.Name())
		return fmt.Errorf("writing %s: %w", f.target, err)
	}
	return nil
}

// Close removes the temporary file unless Commit ran; it is idempotent.
func (f *File) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	f.f.Close()
	return os.Remove(f.f.Name())
}

// Write calls fn with a temporary file next to path and renames it to path
// when fn and the sync succeed; on any error the temporary file is removed
// and whatever was at path is left as it was. The temporary name starts
// with "." and does not end with path's extension, so collectors that glob
// *.prom never read a half-written file.
func Write(path string, perm fs.FileMode, fn func(io.Writer) error) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := fn(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// RemoveStale removes the temporary files of path's writers on this host
// whose process is gone (a kill -9 leaves its temporary file behind), and
// those of earlier erdmakit versions (no host, no pid in the name) older
// than ten minutes; a live writer's, another host's (a shared directory)
// and anything else are left alone. It returns the names it removed.
func RemoveStale(path string) []string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := tempPrefix(base) + hostTag() + "-"
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !stale(e, tempPrefix(base), prefix) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			removed = append(removed, filepath.Join(dir, e.Name()))
		}
	}
	return removed
}

// legacyAge is how old a temporary file of erdmakit before host and pid
// were in the names (.NAME.tmp-DIGITS) must be to be taken for stale: no
// write takes that long.
const legacyAge = 10 * time.Minute

// stale reports whether e is a temporary file of this target whose writer
// is gone: ours (prefix HOST-PID-) with no such process, or a legacy one
// (DIGITS) older than legacyAge.
func stale(e fs.DirEntry, any, ours string) bool {
	if rest, ok := strings.CutPrefix(e.Name(), ours); ok {
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		return ok && err == nil && pid > 0 && !alive(pid)
	}
	rest, ok := strings.CutPrefix(e.Name(), any)
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return false
	}
	fi, err := e.Info()
	return err == nil && time.Since(fi.ModTime()) > legacyAge
}

// tempPrefix starts every temporary name of base: hidden, and without
// base's extension at the end.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// hostTag names this host in temporary names, so that a writer never
// judges another host's writer (same directory over NFS) by a pid.
func hostTag() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "host"
	}
	var b strings.Builder
	for _, r := range h {
		if r == '-' || r == '/' || r < 0x20 || r == 0x7f {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

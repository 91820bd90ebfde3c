// Package atomicfile writes a file so that a reader sees the old content or
// the new, never a part: a temporary file in the same directory, synced,
// then renamed over the target. node_exporter's textfile collector and
// recordings rely on it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular: the target exists and is not a regular file (a device, a
// directory, a FIFO): renaming over it would destroy it.
var ErrNotRegular = errors.New("not a regular file")

// Write calls fn with a temporary file next to path and renames it to path
// when fn and the sync succeed; on any error the temporary file is removed
// and whatever was at path is left as it was. The temporary name starts
// with "." and does not end with path's extension, so collectors that glob
// *.prom never read a half-written file.
func Write(path string, perm fs.FileMode, fn func(io.Writer) error) (err error) {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("writing %s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fn(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Package hostconf is the one place erdmakit setup (and doctor --fix)
// changes a host's configuration files: root-relative, planned before
// written, atomic (internal/atomicfile, following the umask), the previous
// version kept, and a file it did not create never rewritten, only given a
// clearly marked block.
//
// Every read and write goes through an os.Root opened at the root: no path
// component, symlink or "..", may lead outside it (a root whose etc is a
// symlink to /elsewhere/etc is refused, never written through).
//
// A file erdmakit creates starts with Header; a file without it belongs to
// someone else and gets a block between BlockBegin and BlockEnd lines,
// which a later run replaces in place.
package hostconf

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/shq"
)

// Header is the first line of every file erdmakit creates: a file that
// starts with it may be rewritten by a later run, any other file may not.
const Header = "# Written by erdmakit setup; a rerun rewrites this file (revert: see `erdmakit setup` output)."

// Marked-block lines in a file erdmakit did not create; TAG names the
// block ("memlock").
const (
	BlockBegin = "# BEGIN erdmakit setup "
	BlockEnd   = "# END erdmakit setup "
)

// DefaultBackupDir is where previous versions are kept, under the root.
const DefaultBackupDir = "var/lib/erdmakit/setup/backup"

// ErrPath: a path that is not a clean absolute path inside the root.
var ErrPath = errors.New("bad configuration path")

// ErrForeign: a file erdmakit did not create, in a format where a marked
// block cannot be added (a YAML or keyfile belongs to its writer).
var ErrForeign = errors.New("file not created by erdmakit")

// Actions of a FileChange.
const (
	Create    = "create"    // absent: written whole, with Header
	Update    = "update"    // ours (Header), different content: rewritten
	Block     = "block"     // someone else's: the marked block added or replaced
	Unchanged = "unchanged" // already as wanted
)

// Files plans and writes configuration files under a root.
type Files struct {
	// Root is the host root ("/" or "" for this host; a directory in tests).
	Root string
	// BackupDir is root-relative; "" means DefaultBackupDir.
	BackupDir string
	// Stamp names this run's backup directory ("20261204T050400Z").
	Stamp string
}

// FileChange is one file's planned (and, after Apply, made) change. Path is
// as the host sees it ("/etc/security/limits.d/90-erdmakit.conf").
type FileChange struct {
	Path   string      `json:"path"`
	Action string      `json:"action"`
	Mode   fs.FileMode `json:"-"`
	// Content is the whole file as it will be.
	Content string `json:"content"`
	// Backup is where the previous version was kept ("" when there was none
	// or nothing was written yet).
	Backup string `json:"backup,omitempty"`
	// Revert is the command that undoes the change.
	Revert string `json:"revert,omitempty"`
	old    *string
}

// rel is p relative to the root, checked: a clean absolute path.
func rel(p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("%w: %q", ErrPath, p)
	}
	if p == "/" {
		return ".", nil
	}
	return p[1:], nil
}

// open opens the root; every path below is resolved inside it.
func (f *Files) open() (*os.Root, error) {
	root := f.Root
	if root == "" {
		root = "/"
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("host root: %w", err)
	}
	return r, nil
}

// Exists reports whether p is there (a link is not followed).
func (f *Files) Exists(p string) bool {
	rp, err := rel(p)
	if err != nil {
		return false
	}
	r, err := f.open()
	if err != nil {
		return false
	}
	defer r.Close()
	_, err = r.Lstat(rp)
	return err == nil
}

// List returns the names in directory p, sorted; none when it is absent.
func (f *Files) List(p string) ([]string, error) {
	rp, err := rel(p)
	if err != nil {
		return nil, err
	}
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Open(rp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(4096)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	slices.Sort(names)
	return names, nil
}

// Owned reports whether content is a file erdmakit created.
func Owned(content string) bool { return strings.HasPrefix(content, Header+"\n") }

// Read returns the file's content, ok false when it is absent.
func (f *Files) Read(p string) (content string, ok bool, err error) {
	rp, err := rel(p)
	if err != nil {
		return "", false, err
	}
	r, err := f.open()
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	return read(r, p, rp)
}

func read(r *os.Root, p, rp string) (string, bool, error) {
	fi, err := r.Lstat(rp)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s: %w", p, atomicfile.ErrNotRegular)
	}
	if fi.Size() > 1<<20 {
		return "", false, fmt.Errorf("%s: %d bytes: larger than any configuration file erdmakit edits", p, fi.Size())
	}
	fh, err := r.OpenFile(rp, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 1<<20+1))
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p, err)
	}
	return string(b), true, nil
}

// PlanFile compares p with the wanted body (without Header) and says what
// writing it needs: nothing, a whole file, or (in a file erdmakit did not
// create, where blockOK) a marked block named tag. perm is a new file's mode
// before the umask.
func (f *Files) PlanFile(p, body, tag string, blockOK bool, perm fs.FileMode) (FileChange, error) {
	body = strings.TrimRight(body, "\n") + "\n"
	old, ok, err := f.Read(p)
	if err != nil {
		return FileChange{}, err
	}
	c := FileChange{Path: p, Mode: perm}
	switch {
	case !ok:
		c.Action, c.Content = Create, Header+"\n"+body
	case Owned(old):
		c.Action, c.Content = Update, Header+"\n"+body
	case !blockOK:
		return FileChange{}, fmt.Errorf("%s: %w: erdmakit writes its own file there and will not replace this one (move it aside, or add the setting yourself)", p, ErrForeign)
	default:
		c.Action, c.Content = Block, WithBlock(old, tag, body)
	}
	if ok {
		c.old = &old
		if old == c.Content {
			c.Action = Unchanged
		}
	}
	return c, nil
}

// WithBlock returns content with the block tag set to body: replaced where
// it is, appended otherwise.
func WithBlock(content, tag, body string) string {
	begin, end := BlockBegin+tag, BlockEnd+tag
	block := begin + "\n" + strings.TrimRight(body, "\n") + "\n" + end + "\n"
	lines := strings.SplitAfter(content, "\n")
	var out strings.Builder
	in, done := false, false
	for _, l := range lines {
		t := strings.TrimRight(l, "\n")
		switch {
		case t == begin && !done:
			in = true
			out.WriteString(block)
			done = true
		case in && t == end:
			in = false
		case in:
		default:
			out.WriteString(l)
		}
	}
	if done {
		return out.String()
	}
	s := out.String()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + block
}

// Apply makes a planned change: the previous version (if any) is copied to
// the backup directory first, then the file is written atomically. It
// refuses when the file changed since it was planned. An interrupted Apply
// leaves the old file or the new one, never a part, and a rerun completes.
func (f *Files) Apply(c *FileChange) error {
	if c.Action == Unchanged {
		return nil
	}
	rp, err := rel(c.Path)
	if err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	now, ok, err := read(r, c.Path, rp)
	if err != nil {
		return err
	}
	if ok != (c.old != nil) || (ok && now != *c.old) {
		return fmt.Errorf("%s changed since it was planned: plan again", c.Path)
	}
	if ok {
		fi, err := r.Lstat(rp)
		if err != nil {
			return err
		}
		bdir := f.BackupDir
		if bdir == "" {
			bdir = DefaultBackupDir
		}
		stamp := f.Stamp
		if stamp == "" {
			stamp = "previous"
		}
		bk := path.Join("/", bdir, stamp, c.Path)
		brp, err := rel(bk)
		if err != nil {
			return err
		}
		if err := write(r, brp, []byte(now), fi.Mode().Perm(), 0o700); err != nil {
			return fmt.Errorf("keeping the previous %s: %w", c.Path, err)
		}
		c.Backup = bk
		c.Revert = shq.Join("cp", "-p", bk, c.Path)
	} else {
		c.Revert = shq.Join("rm", c.Path)
	}
	if err := write(r, rp, []byte(c.Content), c.Mode, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	return nil
}

// Put writes p whole (no Header, no backup: a file erdmakit generates, such
// as an NCCL graph), atomically and inside the root.
func (f *Files) Put(p string, data []byte, perm fs.FileMode) error {
	rp, err := rel(p)
	if err != nil {
		return err
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := write(r, rp, data, perm, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// write replaces rp inside r atomically: a temporary file in the same
// directory, synced, renamed over it. The target is absent or a regular
// file (atomicfile's rule); an existing file keeps its mode, a new one gets
// perm less the umask. Missing directories are made with dirPerm.
func write(r *os.Root, rp string, data []byte, perm, dirPerm fs.FileMode) error {
	dir, base := path.Split(rp)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if err := r.MkdirAll(dir, dirPerm); err != nil {
		return err
	}
	keep := fs.FileMode(0)
	fi, err := r.Lstat(rp)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%w: refusing to replace it", atomicfile.ErrNotRegular)
	case err == nil:
		keep = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+base+".tmp-erdmakit-"+hex.EncodeToString(rnd[:]))
	fh, err := r.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			fh.Close()
			_ = r.Remove(tmp)
		}
	}()
	if keep != 0 {
		if err := fh.Chmod(keep); err != nil {
			return err
		}
	}
	if _, err := fh.Write(data); err != nil {
		return err
	}
	if err := fh.Sync(); err != nil {
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := r.Rename(tmp, rp); err != nil {
		return err
	}
	done = true
	if d, err := r.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

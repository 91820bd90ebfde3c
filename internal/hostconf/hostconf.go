// Package hostconf is the one place erdmakit setup (and doctor --fix)
// changes a host's configuration files: root-relative, planned before
// written, atomic (internal/atomicfile, following the umask), the previous
// version kept, and a file it did not create never rewritten, only given a
// clearly marked block.
//
// A file erdmakit creates starts with Header; a file without it belongs to
// someone else and gets a block between BlockBegin and BlockEnd lines,
// which a later run replaces in place.
package hostconf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/erdmakit/erdmakit/internal/atomicfile"
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

func (f *Files) abs(p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("%w: %q", ErrPath, p)
	}
	root := f.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, filepath.FromSlash(p)), nil
}

// Owned reports whether content is a file erdmakit created.
func Owned(content string) bool { return strings.HasPrefix(content, Header+"\n") }

// Read returns the file's content, ok false when it is absent.
func (f *Files) Read(p string) (content string, ok bool, err error) {
	a, err := f.abs(p)
	if err != nil {
		return "", false, err
	}
	fi, err := os.Lstat(a)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s: %w", p, atomicfile.ErrNotRegular)
	}
	if fi.Size() > 1<<20 {
		return "", false, fmt.Errorf("%s: %d bytes: larger than any configuration file erdmakit edits", p, fi.Size())
	}
	b, err := os.ReadFile(a)
	return string(b), err == nil, err
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
	a, err := f.abs(c.Path)
	if err != nil {
		return err
	}
	now, ok, err := f.Read(c.Path)
	if err != nil {
		return err
	}
	if ok != (c.old != nil) || (ok && now != *c.old) {
		return fmt.Errorf("%s changed since it was planned: plan again", c.Path)
	}
	if err := os.MkdirAll(filepath.Dir(a), 0o755); err != nil {
		return err
	}
	if ok {
		fi, err := os.Stat(a)
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
		ba, err := f.abs(bk)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(ba), 0o700); err != nil {
			return err
		}
		if err := atomicfile.Write(ba, fi.Mode().Perm(), func(w io.Writer) error {
			_, err := io.WriteString(w, now)
			return err
		}); err != nil {
			return fmt.Errorf("keeping the previous %s: %w", c.Path, err)
		}
		c.Backup = bk
		c.Revert = fmt.Sprintf("cp -p %s %s", bk, c.Path)
	} else {
		c.Revert = "rm " + c.Path
	}
	return atomicfile.Write(a, c.Mode, func(w io.Writer) error {
		_, err := io.WriteString(w, c.Content)
		return err
	})
}

package lab

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteTreeTar writes the tree under dir as an uncompressed tar to w:
// directories, regular files and symlinks (as symlinks). One file over 9p is
// far cheaper than thousands of small ones from a TCG guest.
func WriteTreeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644}
		var data []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(path)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, t, 0o777
		case d.IsDir():
			h.Typeflag, h.Mode, h.Name = tar.TypeDir, 0o755, h.Name+"/"
		case d.Type().IsRegular():
			if data, err = os.ReadFile(path); err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		default:
			return nil
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	return tw.Close()
}

// ExtractTreeTar unpacks what WriteTreeTar wrote into dir. Names that would
// leave dir, and entry types other than directory, file and symlink, are
// errors.
func ExtractTreeTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("untar: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("untar: %q leaves the destination", h.Name)
		}
		to := filepath.Join(dir, name)
		if err := insideDir(dir, filepath.Dir(to)); err != nil {
			return fmt.Errorf("untar: %s: %w", h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(to, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
				var b []byte
				if b, err = io.ReadAll(io.LimitReader(tr, maxRecordFile+1)); err == nil {
					if len(b) > maxRecordFile {
						err = fmt.Errorf("%s is larger than %d bytes", h.Name, maxRecordFile)
					} else {
						err = os.WriteFile(to, b, 0o644)
					}
				}
			}
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
				err = os.Symlink(h.Linkname, to)
			}
		default:
			err = fmt.Errorf("%s: entry type %q not allowed", h.Name, h.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("untar: %w", err)
		}
	}
}

// insideDir checks that p, once the symlinks already extracted are
// followed, is still under dir (a link entry followed by a file "through" it
// must not write elsewhere). Parts of p that do not exist yet are fine.
func insideDir(dir, p string) error {
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for q := p; ; q = filepath.Dir(q) {
		r, err := filepath.EvalSymlinks(q)
		if err == nil {
			if r != base && !strings.HasPrefix(r, base+string(filepath.Separator)) {
				return fmt.Errorf("leads outside the destination (to %s)", r)
			}
			return nil
		}
		if q == dir || q == filepath.Dir(q) {
			return nil
		}
	}
}

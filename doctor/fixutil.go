package doctor

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/erdmakit/erdmakit/internal/hostconf"
)

func fsMode(perm uint32) fs.FileMode { return fs.FileMode(perm) }

func readDirNames(root, dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}

func exists(files *hostconf.Files, p string) bool {
	root := files.Root
	if root == "" {
		root = "/"
	}
	_, err := os.Lstat(filepath.Join(root, p))
	return err == nil
}

package doctor

import (
	"io/fs"
)

func fsMode(perm uint32) fs.FileMode { return fs.FileMode(perm) }

//go:build !linux

package hostfs

import "os"

func openDirFD(string) int { return -1 }

func closeDirFD(int) {}

func (r *Root) openInRoot(string) (*os.File, error, bool) { return nil, nil, false }

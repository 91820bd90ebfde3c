//go:build !linux

package ncclog

import "os"

// mapRest maps nothing here: the log is read (mapping pays off only with
// MADV_DONTNEED releasing the scanned pages, which syscall has on Linux).
func mapRest(*os.File, int64) (whole, data []byte, unmap func(), ok bool) {
	return nil, nil, nil, false
}

func releasePages([]byte) {}

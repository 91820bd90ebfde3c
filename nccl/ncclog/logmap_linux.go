//go:build linux

package ncclog

import (
	"io"
	"os"
	"syscall"
)

// mapRest maps f from its offset to its end, read-only, and moves the
// offset to the end. It maps nothing (ok false) for files that are not
// regular or have fewer than min bytes left.
// whole is the mapping (page aligned; data is its tail) for releasePages.
func mapRest(f *os.File, min int64) (whole, data []byte, unmap func(), ok bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, nil, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || fi.Size()-off < min || fi.Size() > 1<<46 {
		return nil, nil, nil, false
	}
	// Offsets must be page aligned: map from the page holding off.
	page := int64(os.Getpagesize())
	base := off &^ (page - 1)
	m, err := syscall.Mmap(int(f.Fd()), base, int(fi.Size()-base), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, nil, false
	}
	if _, err := f.Seek(fi.Size(), io.SeekStart); err != nil {
		syscall.Munmap(m)
		return nil, nil, nil, false
	}
	return m, m[off-base:], func() { syscall.Munmap(m) }, true
}

// releasePages tells the kernel that pages, a page-aligned part of a
// mapping, are not needed any more (MADV_DONTNEED: the next access reads
// them from the file again).
func releasePages(pages []byte) { _ = syscall.Madvise(pages, syscall.MADV_DONTNEED) }

package ncclog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// ErrLogShrank reports a log file cut shorter while it was being analysed
// (a rotation truncating it): the pages mapped past its new end are gone.
var ErrLogShrank = errors.New("log file shrank while being read")

// mapMin is the smallest file worth mapping: below a few chunks the copy
// that mapping saves costs less than the mapping itself.
const mapMin = 4 * chunkSize

// mappedLog hands out chunks of a log mapped into memory: the workers scan
// the page cache in place instead of copying each chunk in (a read copies
// every byte once, about 40% of the CPU time of a scan). Chunks are cut as
// chunkReader cuts them, so the two give the same analysis.
type mappedLog struct {
	whole []byte // the mapping, page aligned
	data  []byte // the log: a tail of whole
	off   int
	size  int
}

// buffer is nil: chunks are slices of the mapping, not copies.
func (m *mappedLog) buffer() []byte { return nil }

func (m *mappedLog) next([]byte) (data []byte, long bool, err error) {
	rest := m.data[m.off:]
	switch {
	case len(rest) == 0:
		return nil, false, nil
	case len(rest) <= m.size:
		m.off = len(m.data)
		return rest, false, nil
	}
	win := rest[:m.size]
	if last := bytes.LastIndexByte(win, '\n'); last >= 0 {
		m.off += last + 1
		return win[:last+1], false, nil
	}
	// A line longer than a chunk: its first size bytes, the rest skipped
	// a chunk at a time, each skipped window's pages released: a 2 GB
	// line without a newline was otherwise mapped in whole (RssFile 2 GB)
	// to find its end. The longest line held is one chunk.
	skip := m.off + m.size
	for {
		w := m.data[skip:min(skip+m.size, len(m.data))]
		if end := bytes.IndexByte(w, '\n'); end >= 0 {
			m.off = skip + end + 1
			break
		}
		m.releaseSpan(skip, skip+len(w))
		if skip += len(w); skip >= len(m.data) {
			m.off = len(m.data)
			break
		}
	}
	return win, true, nil
}

// releaseSpan releases the whole pages inside data[lo:hi] (a page shared
// with a chunk still being scanned, or with the next, stays mapped).
func (m *mappedLog) releaseSpan(lo, hi int) {
	if m.whole == nil {
		return
	}
	base := len(m.whole) - len(m.data) // data's offset in the mapping
	page := os.Getpagesize()
	plo, phi := (base+lo+page-1)&^(page-1), (base+hi)&^(page-1)
	if phi > plo {
		releasePages(m.whole[plo:phi])
	}
}

// release drops the pages of a scanned chunk from the process's mappings
// (they stay in the page cache; a neighbour that still reads one of them
// faults it back in), so that the resident set stays a few chunks whatever
// the size of the log.
func (m *mappedLog) release(chunk []byte) {
	if len(chunk) == 0 || m.whole == nil {
		return
	}
	off := cap(m.whole) - cap(chunk) // chunk's offset in the mapping
	page := os.Getpagesize()
	lo, hi := off&^(page-1), (off+len(chunk))&^(page-1)
	if off+len(chunk) == len(m.whole) {
		hi = len(m.whole)
	}
	// Whole pages only: the page the next chunk starts in stays mapped
	// until that chunk is released. Released, it would be faulted back
	// in by the next chunk's scan, and the kernel maps a large folio
	// (here up to a MiB of the chunk just released) on one fault: the
	// resident set grew by a chunk per chunk (1 GiB for a 1 GiB log).
	if hi > lo {
		releasePages(m.whole[lo:hi])
	}
}

// analyze analyses r in parallel chunks: mapped when r is a file that can
// be mapped, read otherwise (through ctxio, so that a blocked read ends with
// ctx). Either way no chunk is taken once ctx is done.
func analyze(ctx context.Context, r io.Reader, size, workers int) (*Analyzer, error) {
	if f, ok := r.(*os.File); ok {
		if a, mapped, err := analyzeMapped(ctx, f, size, workers); mapped {
			return a, err
		}
	}
	return analyzeSource(ctx, newChunkReader(ctxio.NewReader(ctx, r), size), size, workers)
}

// analyzeMapped analyses the rest of f, mapped into memory, and leaves f's
// offset at its end as reading it would. ok is false where f cannot be
// mapped (not a regular file, too small, no mmap on this system): the
// caller reads it instead.
func analyzeMapped(ctx context.Context, f *os.File, size, workers int) (a *Analyzer, ok bool, err error) {
	whole, data, unmap, ok := mapRest(f, mapMin)
	if !ok {
		return nil, false, nil
	}
	defer unmap()
	a, err = analyzeSource(ctx, &mappedLog{whole: whole, data: data, size: size}, size, workers)
	return a, true, err
}

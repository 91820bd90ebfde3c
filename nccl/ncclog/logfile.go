package ncclog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// ErrLogShrank reports a log file cut shorter while it was being analysed
// (a rotation truncating it): the part of the file the scan began with is
// gone.
var ErrLogShrank = errors.New("log file shrank while being read")

// fileChunks hands out the chunks of a regular file: each worker reads its
// own chunk with a positioned read (pread) at an offset it claims, so that
// the workers' copies out of the page cache run in parallel, and nothing
// but the claim is under the scan's lock. Chunks are cut as chunkReader
// cuts them (whole lines; a line of size bytes or more is cut to its first
// size bytes), so the two give the same analysis.
//
// The file is not mapped: on the VMs this is measured on (docs/parse.md),
// scanning mapped page-cache pages cost 3-4 times the CPU of copying them
// into a reused buffer and scanning that (a TLB miss and a nested page
// walk on every 4 KiB page).
type fileChunks struct {
	r     io.ReaderAt
	first int64 // where the scan began: a line start
	off   int64 // the next chunk's start (under the scan's lock)
	end   int64 // the file's size when the scan began
	size  int

	// conn is the file's descriptor for readCached (nil: only ReadAt);
	// noNowait is set once the kernel refused RWF_NOWAIT for it.
	conn     syscall.RawConn
	noNowait atomic.Bool
}

// Where a chunk's read begins and ends around the chunk itself.
const (
	// readBefore: the byte before a chunk says whether the chunk starts a
	// line. A chunk's read starts a cache line earlier, not one byte, so
	// that the kernel's copy out of the page cache keeps the source and
	// the buffer equally aligned (a copy one byte off cost about 10% more).
	readBefore = 64
	// readAfter: the same read takes this much past the chunk, where its
	// last line most likely ends; a longer line is read on in a second
	// read (doubling up to the size at which a line is cut).
	readAfter = 4 << 10
)

// buffer holds a chunk and the bytes read around it; next grows it to hold
// a last line up to the size at which a line is cut, where one is longer.
func (c *fileChunks) buffer() []byte {
	return make([]byte, c.size+readBefore+min(readAfter, c.size))
}

// next claims the next size bytes of the file and returns the lines that
// start in them: from the first line start (the chunk before ends the line
// that runs into this one) through the end of the last line, read on past
// the chunk. A line of size bytes or more is cut: its first size bytes are
// cut, the rest belongs to no line (a chunk inside it returns nothing).
// One read usually covers it all: the chunk, a few bytes before it and
// readAfter bytes after it.
func (c *fileChunks) next(bufp *[]byte, unlock func()) (lines, cut []byte, ok bool, err error) {
	lo := c.off
	if lo >= c.end {
		unlock()
		return nil, nil, false, nil
	}
	hi := min(lo+int64(c.size), c.end)
	c.off = hi
	unlock()

	buf := *bufp
	from := max(lo-readBefore, c.first)
	n := int(min(hi+min(readAfter, int64(c.size)), c.end) - from)
	if err := c.readAt(buf[:n], from); err != nil {
		return nil, nil, false, err
	}
	start := int(lo - from) // of the first line starting in the chunk
	stop := int(hi - from)  // the chunk's end
	if start > 0 && buf[start-1] != '\n' {
		i := bytes.IndexByte(buf[start:stop], '\n')
		if i < 0 {
			return buf[:0], nil, true, nil // inside one line
		}
		start += i + 1
	}
	data := buf[start:stop]
	t := start + bytes.LastIndexByte(data, '\n') + 1 // the start of the last line
	if t == stop {
		return data, nil, true, nil
	}
	// The last line runs past the chunk, or the file ends without a
	// newline: find its end in what was read past the chunk, else read on
	// to its end or to the size at which it is cut.
	limit := int(min(int64(t+c.size), c.end-from)) // in buf
	for seen := stop; ; {
		if i := bytes.IndexByte(buf[seen:n], '\n'); i >= 0 && seen+i-t < c.size {
			return buf[start : seen+i+1], nil, true, nil
		}
		if n >= limit {
			break
		}
		more := min(max(n-stop, readAfter), limit-n) // doubling what was read past the chunk
		if n+more > len(buf) {
			grown := make([]byte, 2*c.size+readBefore)
			copy(grown, buf[:n])
			buf, *bufp = grown, grown
		}
		if err := c.readAt(buf[n:n+more], from+int64(n)); err != nil {
			return nil, nil, false, err
		}
		seen, n = n, n+more
	}
	if last := buf[t:limit]; len(last) < c.size { // the file ends inside it
		return buf[start:limit], nil, true, nil
	}
	return buf[start:t], buf[t : t+c.size], true, nil
}

// readAt fills p from offset off: what the page cache holds by readCached,
// the rest by ReadAt. A file now shorter than the scan began with is
// ErrLogShrank.
func (c *fileChunks) readAt(p []byte, off int64) error {
	k := c.readCached(p, off)
	var err error
	if k < len(p) {
		var more int
		more, err = c.r.ReadAt(p[k:], off+int64(k))
		k += more
	}
	switch {
	case k == len(p):
		return nil
	case err == io.EOF || err == nil:
		return ErrLogShrank
	default:
		return err
	}
}

// analyze analyses r in parallel chunks: a regular file by positioned
// reads (fileChunks), anything else read in turn through ctxio, so that a
// blocked read ends with ctx. Either way no chunk is taken once ctx is
// done.
func analyze(ctx context.Context, r io.Reader, size, workers int) (*Analyzer, error) {
	if f, ok := r.(*os.File); ok {
		if src, ok := newFileChunks(f, size); ok {
			return analyzeSource(ctx, src, size, workers)
		}
	}
	return analyzeSource(ctx, newChunkReader(ctxio.NewReader(ctx, r), size), size, workers)
}

// newFileChunks analyses f from its offset to its size now, and moves the
// offset to that end as reading it would. ok is false where f is not a
// regular file or its offset is unknown: the caller reads it instead.
func newFileChunks(f *os.File, size int) (*fileChunks, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, false
	}
	end := max(fi.Size(), off)
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		return nil, false
	}
	c := &fileChunks{r: f, first: off, off: off, end: end, size: size}
	if conn, err := f.SyscallConn(); err == nil {
		c.conn = conn
	}
	return c, true
}

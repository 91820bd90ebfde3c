// Package ctxio makes a blocking reader honour a context: a parser reading a
// FIFO or a silent stdin returns when the user presses Ctrl-C, instead of
// waiting for data that never comes.
package ctxio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// chunk is what one Read of the underlying reader returns.
type chunk struct {
	n   int
	err error
}

// Reader reads r until ctx is done; then Read returns ctx's error at once,
// even while r blocks (the Read in flight is abandoned: use Reader for
// inputs the process is about to give up on, a file or stdin).
type Reader struct {
	ctx  context.Context
	r    io.Reader
	buf  []byte // the goroutine reads here, so a late read never writes the caller's p
	res  chan chunk
	busy bool // a Read is in flight in the goroutine
	err  error
}

// maxBuf caps the goroutine's buffer: a caller reading 1 MiB at a time
// (the NCCL log analyser) gets it in one handoff, not sixteen.
const maxBuf = 1 << 20

// NewReader wraps r. A context that can never end (context.Background)
// gets r itself; a reader that never blocks (a regular file, bytes or
// strings) gets a check of ctx before each Read, without the goroutine and
// copy a blocking reader needs (they were a quarter of `parse nccl-log`'s
// CPU time on a page-cached log).
func NewReader(ctx context.Context, r io.Reader) io.Reader {
	switch {
	case ctx.Done() == nil:
		return r
	case neverBlocks(r):
		return checkReader{ctx: ctx, r: r}
	}
	return &Reader{ctx: ctx, r: r, res: make(chan chunk, 1)}
}

func neverBlocks(r io.Reader) bool {
	switch r := r.(type) {
	case *bytes.Reader, *strings.Reader, *bytes.Buffer:
		return true
	case *os.File:
		fi, err := r.Stat()
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}

// checkReader fails its next Read once ctx ends.
type checkReader struct {
	ctx context.Context
	r   io.Reader
}

func (c checkReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Read implements io.Reader.
func (c *Reader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !c.busy {
		c.busy = true
		if want := min(len(p), maxBuf); len(c.buf) < want {
			c.buf = make([]byte, want)
		}
		buf := c.buf[:min(len(p), len(c.buf))]
		go func() {
			n, err := c.r.Read(buf)
			c.res <- chunk{n, err}
		}()
	}
	select {
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		return 0, c.err
	case ch := <-c.res:
		c.busy = false
		n := copy(p, c.buf[:ch.n])
		if ch.err != nil {
			c.err = ch.err
		}
		return n, ch.err
	}
}

// Open opens a file named by the user for reading, giving up when ctx ends:
// opening a FIFO blocks until a writer comes, and Ctrl-C must still end
// the command. An open that completes after ctx ended is closed.
func Open(ctx context.Context, path string) (*os.File, error) {
	if ctx.Done() == nil {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, &os.PathError{Op: "open", Path: path, Err: ctx.Err()}
	}
}

// ReadFile reads a whole file of at most max bytes named by the user,
// giving up when ctx ends (a FIFO with no writer, or a silent one).
func ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	f, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(NewReader(ctx, f), max+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}

// ErrTooLarge is wrapped by ReadFile when a file is bigger than its bound.
var ErrTooLarge = errors.New("file too large")

// Do calls fn and returns its result, or ctx's error as soon as ctx ends
// while fn still runs: fn is then left to finish in its goroutine and its
// result is dropped, so fn must release whatever it holds (a file it was
// handed, one it opens) itself. fn is called exactly once, even when ctx
// has already ended (so that it can release what it was handed); callers
// that should not start work after an end check ctx.Err() first. It is for
// calls that can stall in the kernel with no way to interrupt them: a sysfs
// read is a driver's show() (a wedged device holds it), a directory on a
// dead network mount never answers. A context that can never end calls fn
// directly.
func Do[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return fn()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

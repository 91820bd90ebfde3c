// Package ctxio makes a blocking reader honour a context: a parser reading a
// FIFO or a silent stdin returns when the user presses Ctrl-C, instead of
// waiting for data that never comes.
package ctxio

import (
	"context"
	"io"
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

// NewReader wraps r.
func NewReader(ctx context.Context, r io.Reader) *Reader {
	return &Reader{ctx: ctx, r: r, buf: make([]byte, 64<<10), res: make(chan chunk, 1)}
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

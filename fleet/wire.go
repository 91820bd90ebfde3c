package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/erdmakit/erdmakit/internal/frame"
)

// The rendezvous protocol: every message is one frame (see internal/frame),
//
//	magic "EKFL" | version u16 | type u8 | reserved u8 | length u32 (big endian) | JSON payload
//
// bounded by MaxPayload. Each read and write has a deadline. Version 2 took
// the header layout the bw protocol has (version 1 had a one-byte version).
const (
	WireVersion = 2
	// MaxPayload bounds one frame's payload: a doctor report of a large host is
	// tens of KiB; anything near this limit is garbage.
	MaxPayload = 4 << 20
)

var wire = frame.Spec{Magic: [4]byte{'E', 'K', 'F', 'L'}, Version: WireVersion, MaxPayload: MaxPayload}

// MsgType says what a frame carries.
type MsgType uint8

const (
	MsgHello   MsgType = 1 // member -> rank 0: who I am (Hello)
	MsgWelcome MsgType = 2 // rank 0 -> member: accepted (Welcome)
	MsgReport  MsgType = 3 // member -> rank 0: a doctor report (Report)
	MsgTask    MsgType = 4 // rank 0 -> member: do this (Task)
	MsgResult  MsgType = 5 // member -> rank 0: the task's outcome (TaskResult)
	MsgError   MsgType = 6 // either way: a fatal error (ErrorMsg)
	MsgBye     MsgType = 7 // rank 0 -> member: all done
)

func (t MsgType) String() string {
	switch t {
	case MsgHello:
		return "hello"
	case MsgWelcome:
		return "welcome"
	case MsgReport:
		return "report"
	case MsgTask:
		return "task"
	case MsgResult:
		return "result"
	case MsgError:
		return "error"
	case MsgBye:
		return "bye"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// Errors a decoder returns for frames that are not ours (the first three are
// internal/frame's, shared with the bw protocol).
var (
	ErrBadMagic    = frame.ErrBadMagic
	ErrVersion     = frame.ErrVersion
	ErrTooLarge    = frame.ErrTooLarge
	ErrUnknownType = errors.New("fleet: unknown message type")
)

// Frame is one decoded message.
type Frame struct {
	Type    MsgType
	Payload []byte
}

// ReadFrame reads one frame from r; io.EOF when r ends before it.
func ReadFrame(r io.Reader) (Frame, error) { return readFrame(r, MaxPayload) }

// readFrame is ReadFrame refusing, before reading it, a payload over max.
func readFrame(r io.Reader, max uint32) (Frame, error) {
	h, err := wire.ReadHeader(r)
	if err == io.EOF {
		return Frame{}, io.EOF
	}
	if err != nil {
		return Frame{}, fmt.Errorf("fleet: reading a frame: %w", err)
	}
	t := MsgType(h.Type)
	if t < MsgHello || t > MsgBye {
		return Frame{}, fmt.Errorf("%w: %d", ErrUnknownType, h.Type)
	}
	if h.Len > max {
		return Frame{}, fmt.Errorf("fleet: %s of %d bytes (at most %d here): %w", t, h.Len, max, ErrTooLarge)
	}
	p, err := frame.ReadPayload(r, h)
	if err != nil {
		return Frame{}, fmt.Errorf("fleet: reading %s: %w", t, err)
	}
	return Frame{Type: t, Payload: p}, nil
}

// WriteFrame writes one frame to w.
func WriteFrame(w io.Writer, t MsgType, payload []byte) error {
	buf, err := wire.Append(make([]byte, 0, frame.HeaderLen+len(payload)), uint8(t), payload)
	if err != nil {
		return fmt.Errorf("fleet: %s: %w", t, err)
	}
	_, err = w.Write(buf)
	return err
}

// Conn is a rendezvous connection: typed JSON messages with a deadline on
// every read and write.
type Conn struct {
	c       net.Conn
	timeout time.Duration
}

// NewConn wraps c; timeout bounds each message (a member that sends nothing
// for that long is considered gone).
func NewConn(c net.Conn, timeout time.Duration) *Conn { return &Conn{c: c, timeout: timeout} }

// Close closes the connection; closing twice is harmless.
func (c *Conn) Close() error {
	err := c.c.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.c.RemoteAddr() }

func (c *Conn) deadline(ctx context.Context, timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(d) {
		d = dl
	}
	return d
}

// Send writes one message.
func (c *Conn) Send(ctx context.Context, t MsgType, v any) error {
	p, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("fleet: encoding %s: %w", t, err)
	}
	if err := c.c.SetWriteDeadline(c.deadline(ctx, c.timeout)); err != nil {
		return err
	}
	if err := WriteFrame(c.c, t, p); err != nil {
		return fmt.Errorf("fleet: sending %s to %s: %w", t, c.c.RemoteAddr(), err)
	}
	return nil
}

// Recv reads one message of type want into v, waiting at most timeout (0:
// the connection's). An error message from the peer becomes a *PeerError.
func (c *Conn) Recv(ctx context.Context, want MsgType, v any, timeout time.Duration) error {
	return c.recv(ctx, want, v, timeout, MaxPayload)
}

// recv is Recv refusing a payload over max before reading it.
func (c *Conn) recv(ctx context.Context, want MsgType, v any, timeout time.Duration, max uint32) error {
	if timeout <= 0 {
		timeout = c.timeout
	}
	if err := c.c.SetReadDeadline(c.deadline(ctx, timeout)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	f, err := readFrame(c.c, max)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("fleet: waiting for %s from %s: %w", want, c.c.RemoteAddr(), ctx.Err())
		}
		return fmt.Errorf("fleet: waiting for %s from %s: %w", want, c.c.RemoteAddr(), err)
	}
	if f.Type == MsgError && want != MsgError {
		var e ErrorMsg
		if err := json.Unmarshal(f.Payload, &e); err != nil {
			return fmt.Errorf("fleet: undecodable error message from %s: %w", c.c.RemoteAddr(), err)
		}
		return &PeerError{Addr: c.c.RemoteAddr().String(), Msg: e.Error}
	}
	if f.Type != want {
		return fmt.Errorf("fleet: expected %s from %s, got %s", want, c.c.RemoteAddr(), f.Type)
	}
	if err := json.Unmarshal(f.Payload, v); err != nil {
		return fmt.Errorf("fleet: decoding %s from %s: %w", want, c.c.RemoteAddr(), err)
	}
	return nil
}

// ErrorMsg is the payload of MsgError.
type ErrorMsg struct {
	Error string `json:"error"`
}

// PeerError is an error the other side reported.
type PeerError struct {
	Addr string
	Msg  string
}

func (e *PeerError) Error() string { return "fleet: " + e.Addr + " reported: " + e.Msg }

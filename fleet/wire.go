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
	wireVersion = 2
	// maxPayload bounds one frame's payload: a doctor report of a large host is
	// tens of KiB; anything near this limit is garbage.
	maxPayload = 4 << 20
)

var wire = frame.Spec{Magic: [4]byte{'E', 'K', 'F', 'L'}, Version: wireVersion, MaxPayload: maxPayload}

// msgType says what a frame carries.
type msgType uint8

const (
	msgHello   msgType = 1 // member -> rank 0: who I am (Hello)
	msgWelcome msgType = 2 // rank 0 -> member: accepted (Welcome)
	msgReport  msgType = 3 // member -> rank 0: a doctor report (Report)
	msgTask    msgType = 4 // rank 0 -> member: do this (Task)
	msgResult  msgType = 5 // member -> rank 0: the task's outcome (TaskResult)
	msgError   msgType = 6 // either way: a fatal error (ErrorMsg)
	msgBye     msgType = 7 // rank 0 -> member: all done
)

func (t msgType) String() string {
	switch t {
	case msgHello:
		return "hello"
	case msgWelcome:
		return "welcome"
	case msgReport:
		return "report"
	case msgTask:
		return "task"
	case msgResult:
		return "result"
	case msgError:
		return "error"
	case msgBye:
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

// wireFrame is one decoded message.
type wireFrame struct {
	Type    msgType
	Payload []byte
}

// readWireFrame reads one frame from r; io.EOF when r ends before it.
func readWireFrame(r io.Reader) (wireFrame, error) { return readFrame(r, maxPayload) }

// readFrame is ReadFrame refusing, before reading it, a payload over max.
func readFrame(r io.Reader, max uint32) (wireFrame, error) {
	h, err := wire.ReadHeader(r)
	if err == io.EOF {
		return wireFrame{}, io.EOF
	}
	if err != nil {
		return wireFrame{}, fmt.Errorf("fleet: reading a frame: %w", err)
	}
	t := msgType(h.Type)
	if t < msgHello || t > msgBye {
		return wireFrame{}, fmt.Errorf("%w: %d", ErrUnknownType, h.Type)
	}
	if h.Len > max {
		return wireFrame{}, fmt.Errorf("fleet: %s of %d bytes (at most %d here): %w", t, h.Len, max, ErrTooLarge)
	}
	p, err := frame.ReadPayload(r, h)
	if err != nil {
		return wireFrame{}, fmt.Errorf("fleet: reading %s: %w", t, err)
	}
	return wireFrame{Type: t, Payload: p}, nil
}

// writeFrame writes one frame to w.
func writeFrame(w io.Writer, t msgType, payload []byte) error {
	buf, err := wire.Append(make([]byte, 0, frame.HeaderLen+len(payload)), uint8(t), payload)
	if err != nil {
		return fmt.Errorf("fleet: %s: %w", t, err)
	}
	_, err = w.Write(buf)
	return err
}

// peerConn is a rendezvous connection: typed JSON messages with a deadline on
// every read and write.
type peerConn struct {
	c       net.Conn
	timeout time.Duration
}

// newPeerConn wraps c; timeout bounds each message (a member that sends nothing
// for that long is considered gone).
func newPeerConn(c net.Conn, timeout time.Duration) *peerConn {
	return &peerConn{c: c, timeout: timeout}
}

// Close closes the connection; closing twice is harmless.
func (c *peerConn) Close() error {
	err := c.c.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// RemoteAddr is the peer's address.
func (c *peerConn) RemoteAddr() net.Addr { return c.c.RemoteAddr() }

func (c *peerConn) deadline(ctx context.Context, timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(d) {
		d = dl
	}
	return d
}

// Send writes one message.
func (c *peerConn) Send(ctx context.Context, t msgType, v any) error {
	p, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("fleet: encoding %s: %w", t, err)
	}
	if err := c.c.SetWriteDeadline(c.deadline(ctx, c.timeout)); err != nil {
		return err
	}
	if err := writeFrame(c.c, t, p); err != nil {
		return fmt.Errorf("fleet: sending %s to %s: %w", t, c.c.RemoteAddr(), err)
	}
	return nil
}

// Recv reads one message of type want into v, waiting at most timeout (0:
// the connection's). An error message from the peer becomes a *PeerError.
func (c *peerConn) Recv(ctx context.Context, want msgType, v any, timeout time.Duration) error {
	return c.recv(ctx, want, v, timeout, maxPayload)
}

// recv is Recv refusing a payload over max before reading it.
func (c *peerConn) recv(ctx context.Context, want msgType, v any, timeout time.Duration, max uint32) error {
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
	if f.Type == msgError && want != msgError {
		var e errorMsg
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

// errorMsg is the payload of MsgError.
type errorMsg struct {
	Error string `json:"error"`
}

// PeerError is an error the other side reported.
type PeerError struct {
	Addr string
	Msg  string
}

func (e *PeerError) Error() string { return "fleet: " + e.Addr + " reported: " + e.Msg }

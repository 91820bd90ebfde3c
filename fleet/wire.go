package fleet

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/internal/frame"
)

// The rendezvous protocol: every message is one frame (see internal/frame),
//
//	magic "EKFL" | version u16 | type u8 | reserved u8 | length u32 (big endian) | JSON payload
//
// bounded by MaxPayload. Each read and write has a deadline. Version 2 took
// the header layout the bw protocol has (version 1 had a one-byte version);
// version 3 authenticates the whole session (auth.go): rank 0 speaks first
// with a challenge, and every later payload is JSON followed by a 32-byte
// tag.
const (
	wireVersion = 3
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
	// msgChallenge opens every connection, rank 0 -> member, untagged: the
	// session's challenge (challengeMsg).
	msgChallenge msgType = 8
)

// challengeMsg is the payload of msgChallenge.
type challengeMsg struct {
	Challenge string `json:"challenge"` // nonceLen random bytes, hex
}

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
	case msgChallenge:
		return "challenge"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// Errors a decoder returns for frames that are not ours, comparable with
// errors.Is.
var (
	// ErrProtocol: the peer sent something that is not the fleet protocol
	// (bad magic, an unknown message type, a frame over the size bound).
	ErrProtocol = errors.New("fleet protocol error")
	// ErrVersion: the peer speaks another fleet protocol version.
	ErrVersion = errors.New("unsupported fleet protocol version")
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
	switch {
	case errors.Is(err, frame.ErrVersion):
		return wireFrame{}, fmt.Errorf("%w: %v", ErrVersion, err)
	case errors.Is(err, frame.ErrBadMagic), errors.Is(err, frame.ErrTooLarge):
		return wireFrame{}, fmt.Errorf("fleet: reading a frame: %v: %w", err, ErrProtocol)
	case err != nil:
		return wireFrame{}, fmt.Errorf("fleet: reading a frame: %w", err)
	}
	t := msgType(h.Type)
	if t < msgHello || t > msgChallenge {
		return wireFrame{}, fmt.Errorf("fleet: unknown message type %d: %w", h.Type, ErrProtocol)
	}
	if h.Len > max {
		return wireFrame{}, fmt.Errorf("fleet: %s of %d bytes (at most %d here): %w", t, h.Len, max, ErrProtocol)
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
// every read and write, each authenticated by its session's key once the
// session is set (setSession).
type peerConn struct {
	c       net.Conn
	timeout time.Duration

	// key is the session key (nil before setSession: frames go untagged);
	// me is this side's sender byte in the tags.
	key []byte
	me  byte
	// lenientErrors: an error frame whose tag fails is still reported (a
	// member waiting for its welcome: rank 0 refusing a hello made with
	// another key cannot tag its answer with the member's key).
	lenientErrors bool

	sendMu  sync.Mutex // one frame at a time, in sequence order
	sendSeq uint64
	recvMu  sync.Mutex
	recvSeq uint64
}

// newPeerConn wraps c; timeout bounds each message (a member that sends nothing
// for that long is considered gone).
func newPeerConn(c net.Conn, timeout time.Duration) *peerConn {
	return &peerConn{c: c, timeout: timeout}
}

// setSession authenticates every later frame with key; me is this side.
func (c *peerConn) setSession(key []byte, me byte) {
	c.key, c.me = key, me
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

// Send writes one message, tagged when the session is set.
func (c *peerConn) Send(ctx context.Context, t msgType, v any) error {
	p, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("fleet: encoding %s: %w", t, err)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if c.key != nil {
		p = append(p, frameTag(c.key, c.me, c.sendSeq, t, p)...)
	}
	if err := c.c.SetWriteDeadline(c.deadline(ctx, c.timeout)); err != nil {
		return err
	}
	if err := writeFrame(c.c, t, p); err != nil {
		return fmt.Errorf("fleet: sending %s to %s: %w", t, c.c.RemoteAddr(), err)
	}
	if c.key != nil { // sequence numbers count tagged frames
		c.sendSeq++
	}
	return nil
}

// Recv reads one message of type want into v, waiting at most timeout (0:
// the connection's). An error message from the peer becomes a *PeerError.
func (c *peerConn) Recv(ctx context.Context, want msgType, v any, timeout time.Duration) error {
	return c.recv(ctx, want, v, timeout, maxPayload)
}

// readRaw reads the next frame, whatever its type, untouched.
func (c *peerConn) readRaw(ctx context.Context, timeout time.Duration, max uint32) (wireFrame, error) {
	if timeout <= 0 {
		timeout = c.timeout
	}
	if err := c.c.SetReadDeadline(c.deadline(ctx, timeout)); err != nil {
		return wireFrame{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	return readFrame(&wholeFrames{c: c.c}, max)
}

// frameGrace is how long a frame already begun may take to finish once
// its read's deadline or context has ended.
const frameGrace = 2 * time.Second

// wholeFrames reads one frame from c and never leaves it half read: a
// deadline (or a cancelled context) that strikes after the frame's first
// byte is extended by frameGrace, so the stream stays aligned for the next
// reader (a frame cut in two left the next read on "bad magic", and every
// later frame of the session unreadable). Before the first byte it ends
// the read as usual.
type wholeFrames struct {
	c     net.Conn
	n     int
	grace time.Time
}

func (w *wholeFrames) Read(p []byte) (int, error) {
	for {
		k, err := w.c.Read(p)
		w.n += k
		var ne net.Error
		if k > 0 || err == nil || w.n == 0 || !errors.As(err, &ne) || !ne.Timeout() {
			return k, err
		}
		if w.grace.IsZero() {
			w.grace = time.Now().Add(frameGrace)
		}
		if time.Now().After(w.grace) {
			return k, err
		}
		if serr := w.c.SetReadDeadline(w.grace); serr != nil {
			return k, err
		}
	}
}

// verify checks f's tag as the next frame from the peer and strips it.
// Under recvMu.
func (c *peerConn) verify(f *wireFrame) error {
	if c.key == nil {
		return nil
	}
	peer := fromMember
	if c.me == fromMember {
		peer = fromRank0
	}
	if len(f.Payload) < tagLen {
		return fmt.Errorf("%s from %s: %w", f.Type, c.c.RemoteAddr(), ErrNotAuthentic)
	}
	body, tag := f.Payload[:len(f.Payload)-tagLen], f.Payload[len(f.Payload)-tagLen:]
	if !hmac.Equal(tag, frameTag(c.key, peer, c.recvSeq, f.Type, body)) {
		return fmt.Errorf("%s from %s: %w", f.Type, c.c.RemoteAddr(), ErrNotAuthentic)
	}
	c.recvSeq++
	f.Payload = body
	return nil
}

// next reads and verifies the next frame.
func (c *peerConn) next(ctx context.Context, timeout time.Duration, max uint32) (wireFrame, error) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	f, err := c.readRaw(ctx, timeout, max)
	if err != nil {
		return f, err
	}
	if err := c.verify(&f); err != nil {
		if f.Type == msgError && c.lenientErrors {
			return f, c.unverifiedError(f.Payload)
		}
		return wireFrame{}, err
	}
	return f, nil
}

// unverifiedError reports an error frame that failed its tag, as such.
func (c *peerConn) unverifiedError(p []byte) error {
	var e errorMsg
	if json.Unmarshal(p, &e) != nil && (len(p) < tagLen || json.Unmarshal(p[:len(p)-tagLen], &e) != nil) {
		return fmt.Errorf("fleet: %s refused this rank: %w", c.c.RemoteAddr(), ErrNotAuthentic)
	}
	return &PeerError{Addr: c.c.RemoteAddr().String(), Msg: e.Error + " (this answer is not authenticated with this rank's key: is " + SecretEnv + " the same on every rank?)"}
}

// recv is Recv refusing a payload over max before reading it.
func (c *peerConn) recv(ctx context.Context, want msgType, v any, timeout time.Duration, max uint32) error {
	f, err := c.next(ctx, timeout, max)
	if err != nil {
		var pe *PeerError
		if errors.As(err, &pe) {
			return err
		}
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

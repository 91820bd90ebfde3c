package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"time"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/internal/frame"
)

// The out-of-band protocol (ours, not perftest's) carries everything two
// erdmakit peers must agree on around an RDMA write test. It is unexported:
// importers use Client, Server and their results, so the wire format can
// change without breaking them (both peers run the same erdmakit). Every message is
// one frame:
//
//	offset 0  magic "EKBW"
//	offset 4  protocol version, uint16 big endian
//	offset 6  message type, uint8
//	offset 7  reserved, 0
//	offset 8  payload length, uint32 big endian, at most MaxPayload
//	offset 12 payload
//
// A test is: client Hello, server Accept (or Error); client Endpoints,
// server Endpoints; both connect their queue pairs; client Start, server
// Start (after it read its counters); the client writes; client Done,
// server Done (with the counter deltas). A client may then send another
// Hello on the same connection (the next size of a sweep) or close it.
//
// A latency test opens with LatencyHello instead of Hello and goes the same
// way; between the Starts the two sides play ib_write_lat's ping-pong on one
// QP, and the Dones carry the round trips each side made. A server from
// before latency tests answers LatencyHello with an Error (unknown message).

// protocolVersion is the version this package speaks. A peer with another
// version gets an Error naming both.
const protocolVersion = 1

// DefaultPort is the TCP port `erdmakit bw serve` listens on. perftest uses
// 18515 (and a second device the next ports up), so we take 18600 to let both
// run side by side; it is far from 30608-30623, which the eRDMA driver binds
// in every network namespace in compat mode (reserve_ports_base 0x7790).
const DefaultPort = 18600

// maxPayload bounds one frame's payload: a hostile or broken peer cannot make
// us allocate more than this per message.
const maxPayload = 64 << 10

// MaxQPs bounds the queue pairs of one test (and so an Endpoints message).
const MaxQPs = 1024

const (
	maxString   = 255
	maxCounters = 512
)

// wire is the bw protocol's framing (see internal/frame).
var wire = frame.Spec{Magic: [4]byte{'E', 'K', 'B', 'W'}, Version: protocolVersion, MaxPayload: maxPayload}

// msgType is the type byte of a frame.
type msgType uint8

// The message types.
const (
	msgHello     msgType = 1
	msgAccept    msgType = 2
	msgEndpoints msgType = 3
	msgStart     msgType = 4
	msgDone      msgType = 5
	msgError     msgType = 6
	msgLatency   msgType = 7 // LatencyHello
)

func (t msgType) String() string {
	switch t {
	case msgHello:
		return "hello"
	case msgAccept:
		return "accept"
	case msgEndpoints:
		return "endpoints"
	case msgStart:
		return "start"
	case msgDone:
		return "done"
	case msgError:
		return "error"
	case msgLatency:
		return "latency hello"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// Errors of the out-of-band protocol, comparable with errors.Is.
var (
	// ErrProtocol: the peer sent something that is not our protocol (bad
	// magic, a frame over MaxPayload, a malformed payload, a message out of
	// order).
	ErrProtocol = errors.New("bw protocol error")
	// ErrVersion: the peer speaks another protocol version.
	ErrVersion = errors.New("unsupported bw protocol version")
	// ErrPeer: the peer reported an error (the message says which).
	ErrPeer = errors.New("bw peer error")
)

// HelloMsg opens a bandwidth test: what the client wants (ServerTest.Hello
// gives it to a server's OnTest).
type HelloMsg struct {
	// Device is the server device to use; "" means the server's first.
	Device string
	// ClientDevice and Transport describe the client's side, for the
	// server's log and its check that both sides are in the same mode.
	ClientDevice string
	Transport    string
	Method       connect.Method
	QPs          uint32
	Size         uint64 // bytes per RDMA write
	Iterations   uint64 // per QP; 0 in duration mode
	Duration     time.Duration
	Warmup       time.Duration
	Cooldown     time.Duration
	// Limit is the longest the client expects the write phase to take; the
	// server waits that long (capped by its own maximum) for Done.
	Limit time.Duration
}

// LatencyHelloMsg opens a latency test (RDMA write ping-pong on one QP).
type LatencyHelloMsg struct {
	// Device, ClientDevice, Transport and Method as in Hello.
	Device       string
	ClientDevice string
	Transport    string
	Method       connect.Method
	Size         uint64 // bytes per RDMA write
	// Iterations are the measured round trips, Warmup the unmeasured ones
	// before them: the server answers Warmup+Iterations pings.
	Iterations uint32
	Warmup     uint32
	// Inline is the client's max inline size; the server uses the same
	// (perftest's -I applies to both sides).
	Inline uint32
	// Limit is the longest the client expects the ping-pong to take.
	Limit time.Duration
}

// acceptMsg is the server's answer to Hello.
type acceptMsg struct {
	Device    string
	Transport string
	// CMAddr is where rdma_cm connections are accepted ("10.0.0.1:18601");
	// "" for the out-of-band method.
	CMAddr string
}

// Endpoint is one queue pair as its peer must know it.
type Endpoint struct {
	QPN  uint32
	PSN  uint32
	GID  [16]byte
	LID  uint16
	MTU  uint8 // ibv_mtu enum: 1=256 .. 5=4096
	Addr uint64
	RKey uint32
}

// DoneMsg ends a test (ServerTest.Client). The client sends what it
// wrote; the server answers with its device's counter deltas over the test.
type DoneMsg struct {
	Bytes    uint64
	Messages uint64
	Elapsed  time.Duration
	// Counters are deltas of the sender's device hw_counters (name ->
	// delta); empty where the device has none.
	Counters map[string]uint64
}

// PeerError is an Error message: the peer's reason for ending the test.
type PeerError struct{ Message string }

func (e *PeerError) Error() string { return "peer: " + e.Message }

// Is makes errors.Is(err, ErrPeer) true.
func (e *PeerError) Is(target error) bool { return target == ErrPeer }

// message is one of *HelloMsg, *LatencyHelloMsg, *acceptMsg, *endpointsMsg,
// *startMsg, *DoneMsg, *PeerError.
type message interface{ msgType() msgType }

// endpointsMsg is the list of a side's queue pairs.
type endpointsMsg []Endpoint

// startMsg asks for (client) or acknowledges (server) the start of writing.
type startMsg struct{}

func (*HelloMsg) msgType() msgType        { return msgHello }
func (*acceptMsg) msgType() msgType       { return msgAccept }
func (*endpointsMsg) msgType() msgType    { return msgEndpoints }
func (*startMsg) msgType() msgType        { return msgStart }
func (*DoneMsg) msgType() msgType         { return msgDone }
func (*PeerError) msgType() msgType       { return msgError }
func (*LatencyHelloMsg) msgType() msgType { return msgLatency }

// appendFrame appends m's frame to b.
func appendFrame(b []byte, m message) ([]byte, error) {
	start := len(b)
	b = wire.Begin(b, byte(m.msgType()))
	var err error
	switch m := m.(type) {
	case *HelloMsg:
		b, err = appendTest(b, m.Device, m.ClientDevice, m.Transport, m.Method)
		b = binary.BigEndian.AppendUint32(b, m.QPs)
		b = binary.BigEndian.AppendUint64(b, m.Size)
		b = binary.BigEndian.AppendUint64(b, m.Iterations)
		for _, d := range []time.Duration{m.Duration, m.Warmup, m.Cooldown, m.Limit} {
			b = binary.BigEndian.AppendUint64(b, uint64(d))
		}
	case *LatencyHelloMsg:
		b, err = appendTest(b, m.Device, m.ClientDevice, m.Transport, m.Method)
		b = binary.BigEndian.AppendUint64(b, m.Size)
		b = binary.BigEndian.AppendUint32(b, m.Iterations)
		b = binary.BigEndian.AppendUint32(b, m.Warmup)
		b = binary.BigEndian.AppendUint32(b, m.Inline)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Limit))
	case *acceptMsg:
		b, err = appendString(b, m.Device)
		if err == nil {
			b, err = appendString(b, m.Transport)
		}
		if err == nil {
			b, err = appendString(b, m.CMAddr)
		}
	case *endpointsMsg:
		if len(*m) > MaxQPs {
			return b[:start], fmt.Errorf("%d endpoints: at most %d: %w", len(*m), MaxQPs, ErrProtocol)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(*m)))
		for _, e := range *m {
			b = binary.BigEndian.AppendUint32(b, e.QPN)
			b = binary.BigEndian.AppendUint32(b, e.PSN)
			b = append(b, e.GID[:]...)
			b = binary.BigEndian.AppendUint16(b, e.LID)
			b = append(b, e.MTU)
			b = binary.BigEndian.AppendUint64(b, e.Addr)
			b = binary.BigEndian.AppendUint32(b, e.RKey)
		}
	case *startMsg:
	case *DoneMsg:
		b = binary.BigEndian.AppendUint64(b, m.Bytes)
		b = binary.BigEndian.AppendUint64(b, m.Messages)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Elapsed))
		if len(m.Counters) > maxCounters {
			return b[:start], fmt.Errorf("%d counters: at most %d: %w", len(m.Counters), maxCounters, ErrProtocol)
		}
		names := make([]string, 0, len(m.Counters))
		for k := range m.Counters {
			names = append(names, k)
		}
		sort.Strings(names)
		b = binary.BigEndian.AppendUint16(b, uint16(len(names)))
		for _, k := range names {
			if b, err = appendString(b, k); err != nil {
				break
			}
			b = binary.BigEndian.AppendUint64(b, m.Counters[k])
		}
	case *PeerError:
		msg := m.Message
		if len(msg) > 4096 {
			msg = msg[:4096]
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
		b = append(b, msg...)
	default:
		return b[:start], fmt.Errorf("cannot encode %T: %w", m, ErrProtocol)
	}
	if err != nil {
		return b[:start], err
	}
	if b, err = wire.End(b, start); err != nil {
		return b, fmt.Errorf("%s: %w", m.msgType(), err)
	}
	return b, nil
}

func appendString(b []byte, s string) ([]byte, error) {
	if len(s) > maxString {
		return b, fmt.Errorf("string of %d bytes (at most %d): %w", len(s), maxString, ErrProtocol)
	}
	b = append(b, byte(len(s)))
	return append(b, s...), nil
}

// appendTest appends what both hellos (bandwidth and latency) start with:
// the server device asked for, the client's device and transport, and the
// connection method. decoder.test reads it back.
func appendTest(b []byte, dev, clientDev, transport string, m connect.Method) ([]byte, error) {
	var err error
	for _, s := range []string{dev, clientDev, transport} {
		if err == nil {
			b, err = appendString(b, s)
		}
	}
	return append(b, byte(m)), err
}

// readFrame reads one frame from r and decodes it. The caller bounds the
// time (a deadline on the connection); the size is bounded by MaxPayload.
func readFrame(r io.Reader) (message, error) {
	h, err := wire.ReadHeader(r)
	switch {
	case errors.Is(err, frame.ErrBadMagic):
		return nil, fmt.Errorf("%v (not an erdmakit bw peer?): %w", err, ErrProtocol)
	case errors.Is(err, frame.ErrVersion):
		return nil, fmt.Errorf("%w: %v", ErrVersion, err)
	case errors.Is(err, frame.ErrTooLarge):
		return nil, fmt.Errorf("%v: %w", err, ErrProtocol)
	case err != nil:
		return nil, err
	}
	p, err := frame.ReadPayload(r, h)
	if err != nil {
		return nil, fmt.Errorf("%s %w", msgType(h.Type), err)
	}
	return decodePayload(msgType(h.Type), p)
}

// decodePayload decodes the payload of a frame of type t.
func decodePayload(t msgType, p []byte) (message, error) {
	d := decoder{p: p}
	var m message
	switch t {
	case msgHello:
		h := &HelloMsg{}
		h.Device, h.ClientDevice, h.Transport, h.Method = d.test()
		h.QPs = d.u32()
		h.Size = d.u64()
		h.Iterations = d.u64()
		h.Duration = d.dur()
		h.Warmup = d.dur()
		h.Cooldown = d.dur()
		h.Limit = d.dur()
		if d.err == nil {
			d.err = h.validate()
		}
		m = h
	case msgLatency:
		h := &LatencyHelloMsg{}
		h.Device, h.ClientDevice, h.Transport, h.Method = d.test()
		h.Size = d.u64()
		h.Iterations = d.u32()
		h.Warmup = d.u32()
		h.Inline = d.u32()
		h.Limit = d.dur()
		if d.err == nil {
			d.err = h.validate()
		}
		m = h
	case msgAccept:
		a := &acceptMsg{}
		a.Device = d.str()
		a.Transport = d.str()
		a.CMAddr = d.str()
		m = a
	case msgEndpoints:
		n := d.u32()
		if d.err == nil && n > MaxQPs {
			d.err = fmt.Errorf("%d endpoints (at most %d)", n, MaxQPs)
		}
		const size = 4 + 4 + 16 + 2 + 1 + 8 + 4
		if d.err == nil && int(n)*size > len(d.p) {
			d.err = fmt.Errorf("%d endpoints announced, %d bytes left", n, len(d.p))
		}
		var es endpointsMsg
		if d.err == nil {
			es = make(endpointsMsg, n)
		}
		for i := range es {
			e := &es[i]
			e.QPN = d.u32()
			e.PSN = d.u32()
			copy(e.GID[:], d.bytes(16))
			e.LID = d.u16()
			e.MTU = d.u8()
			e.Addr = d.u64()
			e.RKey = d.u32()
		}
		m = &es
	case msgStart:
		m = &startMsg{}
	case msgDone:
		dn := &DoneMsg{}
		dn.Bytes = d.u64()
		dn.Messages = d.u64()
		dn.Elapsed = d.dur()
		n := int(d.u16())
		if d.err == nil && n > maxCounters {
			d.err = fmt.Errorf("%d counters (at most %d)", n, maxCounters)
		}
		if d.err == nil && n > 0 {
			dn.Counters = make(map[string]uint64, min(n, len(d.p)/9+1))
			for i := 0; i < n && d.err == nil; i++ {
				k := d.str()
				dn.Counters[k] = d.u64()
			}
		}
		m = dn
	case msgError:
		n := int(d.u16())
		m = &PeerError{Message: string(d.bytes(n))}
	default:
		return nil, fmt.Errorf("unknown message %s: %w", t, ErrProtocol)
	}
	if d.err == nil && len(d.p) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.p))
	}
	if d.err != nil {
		return nil, fmt.Errorf("decoding %s: %w: %w", t, d.err, ErrProtocol)
	}
	return m, nil
}

// validate bounds what a Hello may ask for.
func (h *HelloMsg) validate() error {
	switch {
	case h.QPs == 0 || h.QPs > MaxQPs:
		return fmt.Errorf("qps %d: want 1..%d", h.QPs, MaxQPs)
	case h.Size == 0 || h.Size > MaxSize:
		return fmt.Errorf("size %d: want 1..%d", h.Size, MaxSize)
	case h.Iterations == 0 && h.Duration <= 0:
		return errors.New("neither iterations nor a duration")
	case h.Duration < 0 || h.Warmup < 0 || h.Cooldown < 0 || h.Limit < 0:
		return errors.New("negative duration")
	case h.Method > connect.RDMACM:
		return fmt.Errorf("unknown connection method %d", h.Method)
	}
	return nil
}

// validate bounds what a LatencyHello may ask for.
func (h *LatencyHelloMsg) validate() error {
	switch {
	case h.Size == 0 || h.Size > MaxSize:
		return fmt.Errorf("size %d: want 1..%d", h.Size, MaxSize)
	case h.Iterations == 0 || h.Iterations > MaxLatencyIterations:
		return fmt.Errorf("iterations %d: want 1..%d", h.Iterations, MaxLatencyIterations)
	case h.Warmup > MaxLatencyIterations:
		return fmt.Errorf("warm-up %d: want 0..%d", h.Warmup, MaxLatencyIterations)
	case h.Inline > MaxInline:
		return fmt.Errorf("inline %d: want 0..%d", h.Inline, MaxInline)
	case h.Limit < 0:
		return errors.New("negative duration")
	case h.Method > connect.RDMACM:
		return fmt.Errorf("unknown connection method %d", h.Method)
	}
	return nil
}

// MaxSize is the largest message size a test may use (perftest's -a goes to
// 8 MiB; we allow up to 1 GiB for a single size).
const MaxSize = 1 << 30

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.p) {
		d.err = fmt.Errorf("payload cut short: want %d bytes, %d left", n, len(d.p))
		return nil
	}
	b := d.p[:n]
	d.p = d.p[n:]
	return b
}

func (d *decoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) dur() time.Duration {
	v := d.u64()
	if v > math.MaxInt64 {
		if d.err == nil {
			d.err = fmt.Errorf("duration %d out of range", v)
		}
		return 0
	}
	return time.Duration(v)
}

func (d *decoder) str() string {
	n := int(d.u8())
	return string(d.bytes(n))
}

// test reads what appendTest wrote.
func (d *decoder) test() (dev, clientDev, transport string, m connect.Method) {
	dev, clientDev, transport = d.str(), d.str(), d.str()
	return dev, clientDev, transport, connect.Method(d.u8())
}

// conn is one side of the out-of-band connection: every read and write has
// its own deadline.
type conn struct {
	c       net.Conn
	step    time.Duration // deadline of one message
	scratch []byte
}

func (c *conn) send(m message) error {
	b, err := appendFrame(c.scratch[:0], m)
	if err != nil {
		return err
	}
	c.scratch = b
	if err := c.c.SetWriteDeadline(time.Now().Add(c.step)); err != nil {
		return err
	}
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("sending %s: %w", m.msgType(), err)
	}
	return nil
}

// recv reads the next message within wait; an Error message becomes a
// *PeerError.
func (c *conn) recv(wait time.Duration) (message, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return nil, err
	}
	m, err := readFrame(c.c)
	if err != nil {
		return nil, err
	}
	if pe, ok := m.(*PeerError); ok {
		return nil, pe
	}
	return m, nil
}

// expect reads the next message and requires its type.
func expect[T message](c *conn, wait time.Duration, what string) (T, error) {
	var zero T
	m, err := c.recv(wait)
	if err != nil {
		return zero, fmt.Errorf("waiting for %s: %w", what, err)
	}
	t, ok := m.(T)
	if !ok {
		return zero, fmt.Errorf("waiting for %s, got %s: %w", what, m.msgType(), ErrProtocol)
	}
	return t, nil
}

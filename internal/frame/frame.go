// Package frame is the framing erdmakit's TCP protocols share: the bw
// out-of-band protocol (perf) and the fleet rendezvous. A frame is a 12-byte
// header and a payload bounded by the protocol's MaxPayload:
//
//	offset 0  magic, 4 bytes ("EKBW", "EKFL")
//	offset 4  protocol version, uint16 big endian
//	offset 6  message type, uint8
//	offset 7  reserved, 0
//	offset 8  payload length, uint32 big endian
//	offset 12 payload
//
// The payload's encoding is each protocol's own.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// HeaderLen is the size of a frame header.
const HeaderLen = 12

// Errors for frames that are not the protocol's.
var (
	ErrBadMagic = errors.New("bad magic")
	ErrVersion  = errors.New("unsupported protocol version")
	ErrTooLarge = errors.New("frame too large")
)

// Spec is one protocol's framing.
type Spec struct {
	Magic      [4]byte
	Version    uint16
	MaxPayload uint32
}

// Header is a frame header that passed Spec's checks.
type Header struct {
	Type uint8
	Len  uint32 // payload bytes
}

// Begin appends the header of a frame of type t to b; the caller appends the
// payload and then calls End with start = len(b) before Begin.
func (s Spec) Begin(b []byte, t uint8) []byte {
	b = append(b, s.Magic[:]...)
	b = binary.BigEndian.AppendUint16(b, s.Version)
	return append(b, t, 0, 0, 0, 0, 0)
}

// End fills in the payload length of the frame that starts at b[start:]; a
// payload over MaxPayload drops the frame (b[:start]) and is an error.
func (s Spec) End(b []byte, start int) ([]byte, error) {
	n := len(b) - start - HeaderLen
	if n < 0 {
		return b[:start], fmt.Errorf("frame at %d has no header", start)
	}
	if uint64(n) > uint64(s.MaxPayload) {
		return b[:start], fmt.Errorf("payload of %d bytes (at most %d): %w", n, s.MaxPayload, ErrTooLarge)
	}
	binary.BigEndian.PutUint32(b[start+8:], uint32(n))
	return b, nil
}

// Append appends a whole frame of type t with payload p to b.
func (s Spec) Append(b []byte, t uint8, p []byte) ([]byte, error) {
	start := len(b)
	return s.End(append(s.Begin(b, t), p...), start)
}

// ReadHeader reads one header from r and checks its magic, version and
// length. It returns io.EOF when r ends before the first byte and
// io.ErrUnexpectedEOF (wrapped) when it ends inside the header.
func (s Spec) ReadHeader(r io.Reader) (Header, error) {
	var h [HeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, fmt.Errorf("frame header cut short: %w", err)
		}
		return Header{}, err
	}
	if [4]byte(h[:4]) != s.Magic {
		return Header{}, fmt.Errorf("%w %q", ErrBadMagic, h[:4])
	}
	if v := binary.BigEndian.Uint16(h[4:]); v != s.Version {
		return Header{}, fmt.Errorf("peer speaks protocol version %d, this side %d: %w", v, s.Version, ErrVersion)
	}
	n := binary.BigEndian.Uint32(h[8:])
	if n > s.MaxPayload {
		return Header{}, fmt.Errorf("frame announces %d bytes (at most %d): %w", n, s.MaxPayload, ErrTooLarge)
	}
	return Header{Type: h[6], Len: n}, nil
}

// ReadPayload reads h's payload from r (wrapping io.ErrUnexpectedEOF when r
// ends first).
func ReadPayload(r io.Reader, h Header) ([]byte, error) {
	p := make([]byte, h.Len)
	if got, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("payload cut short after %d of %d bytes: %w", got, h.Len, err)
	}
	return p, nil
}

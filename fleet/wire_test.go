package fleet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func encodeFrame(t MsgType, payload string) []byte {
	var b bytes.Buffer
	if err := WriteFrame(&b, t, []byte(payload)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestFrameRoundTrip(t *testing.T) {
	f, err := ReadFrame(bytes.NewReader(encodeFrame(MsgHello, `{"rank":3,"size":4,"host":"gpu3"}`)))
	require.NoError(t, err)
	assert.Equal(t, MsgHello, f.Type)
	assert.JSONEq(t, `{"rank":3,"size":4,"host":"gpu3"}`, string(f.Payload))
}

func TestFrameErrors(t *testing.T) {
	good := encodeFrame(MsgReport, `{}`)
	tooBig := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(tooBig[8:], MaxPayload+1)
	badVersion := append([]byte(nil), good...)
	badVersion[5] = 9
	badType := append([]byte(nil), good...)
	badType[6] = 99
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrBadMagic},
		{"oversized", tooBig, ErrTooLarge},
		{"future version", badVersion, ErrVersion},
		{"unknown type", badType, ErrUnknownType},
		{"truncated header", good[:5], io.ErrUnexpectedEOF},
		{"truncated payload", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"empty", nil, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encodeFrame(MsgHello, `{"rank":1,"size":2,"host":"a"}`))
	f.Add(encodeFrame(MsgReport, `{"rank":1,"host":"a","report":{"status":"ok","findings":[{"id":"port-active","severity":"ok"}]}}`))
	f.Add(encodeFrame(MsgResult, `{"gbps":97.5,"devices":[{"index":0,"gbps":97.5}]}`))
	f.Add([]byte("EKFL\x00\x02\x03\x00\xff\xff\xff\xff"))
	f.Add([]byte("EKFL\x01\x03\x00\x00\x00\x00\x00\x02{}")) // version 1's layout
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes (the reserved byte aside).
		var out bytes.Buffer
		require.NoError(t, WriteFrame(&out, fr.Type, fr.Payload))
		want := append([]byte(nil), b[:out.Len()]...)
		want[7] = 0
		assert.Equal(t, want, out.Bytes())
	})
}

func TestConnRecvTimesOutOnSilentPeer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := NewConn(a, 50*time.Millisecond)
	start := time.Now()
	var h Hello
	err := c.Recv(context.Background(), MsgHello, &h, 0)
	require.Error(t, err)
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestConnRecvPeerError(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		_ = NewConn(b, time.Second).Send(context.Background(), MsgError, ErrorMsg{Error: "rank 3 joined twice"})
	}()
	var w Welcome
	err := NewConn(a, time.Second).Recv(context.Background(), MsgWelcome, &w, 0)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rank 3 joined twice", pe.Msg)
}

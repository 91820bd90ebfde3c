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

func encodeFrame(t msgType, payload string) []byte {
	var b bytes.Buffer
	if err := writeFrame(&b, t, []byte(payload)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestFrameRoundTrip(t *testing.T) {
	f, err := readWireFrame(bytes.NewReader(encodeFrame(msgHello, `{"rank":3,"size":4,"host":"gpu3"}`)))
	require.NoError(t, err)
	assert.Equal(t, msgHello, f.Type)
	assert.JSONEq(t, `{"rank":3,"size":4,"host":"gpu3"}`, string(f.Payload))
}

func TestFrameErrors(t *testing.T) {
	good := encodeFrame(msgReport, `{}`)
	tooBig := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(tooBig[8:], maxPayload+1)
	badVersion := append([]byte(nil), good...)
	badVersion[5] = 9
	badType := append([]byte(nil), good...)
	badType[6] = 99
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrProtocol},
		{"oversized", tooBig, ErrProtocol},
		{"future version", badVersion, ErrVersion},
		{"unknown type", badType, ErrProtocol},
		{"truncated header", good[:5], io.ErrUnexpectedEOF},
		{"truncated payload", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"empty", nil, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readWireFrame(bytes.NewReader(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encodeFrame(msgHello, `{"rank":1,"size":2,"host":"a"}`))
	f.Add(encodeFrame(msgReport, `{"rank":1,"host":"a","report":{"status":"ok","findings":[{"id":"port-active","severity":"ok"}]}}`))
	f.Add(encodeFrame(msgResult, `{"gbps":97.5,"devices":[{"index":0,"gbps":97.5}]}`))
	f.Add([]byte("EKFL\x00\x02\x03\x00\xff\xff\xff\xff"))
	f.Add([]byte("EKFL\x01\x03\x00\x00\x00\x00\x00\x02{}")) // version 1's layout
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := readWireFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes (the reserved byte aside).
		var out bytes.Buffer
		require.NoError(t, writeFrame(&out, fr.Type, fr.Payload))
		want := append([]byte(nil), b[:out.Len()]...)
		want[7] = 0
		assert.Equal(t, want, out.Bytes())
	})
}

func TestConnRecvTimesOutOnSilentPeer(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newPeerConn(a, 50*time.Millisecond)
	start := time.Now()
	var h helloMsg
	err := c.Recv(context.Background(), msgHello, &h, 0)
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
		_ = newPeerConn(b, time.Second).Send(context.Background(), msgError, errorMsg{Error: "rank 3 joined twice"})
	}()
	var w welcomeMsg
	err := newPeerConn(a, time.Second).Recv(context.Background(), msgWelcome, &w, 0)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "rank 3 joined twice", pe.Msg)
}

package fleet

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recConn records what is written through it.
type recConn struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *recConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// take returns what was written since the last take.
func (c *recConn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := bytes.Clone(c.out.Bytes())
	c.out.Reset()
	return b
}

// session opens an authenticated session over loopback: rank 0's end and
// the member's, each recording its writes.
func session(t *testing.T, key []byte) (r0, m *peerConn, r0w, mw *recConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ctx := context.Background()
	errs := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			errs <- err
			return
		}
		r0w = &recConn{Conn: c}
		r0 = newPeerConn(r0w, 2*time.Second)
		if _, err := greet(ctx, r0, key, 2*time.Second); err != nil {
			errs <- err
			return
		}
		errs <- r0.Send(ctx, msgWelcome, welcomeMsg{Size: 2})
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	mw = &recConn{Conn: c}
	m = newPeerConn(mw, 2*time.Second)
	require.NoError(t, hello(ctx, m, helloMsg{Rank: 1, Size: 2, Host: "h1"}, 2*time.Second, key))
	require.NoError(t, <-errs)
	t.Cleanup(func() { r0.Close(); m.Close() })
	r0w.take()
	mw.take()
	return r0, m, r0w, mw
}

// TestSessionRefusesReplayedEditedAndReflectedFrames: issue 27 item 4.
// Every frame of a session is tagged with its sender and its place: a
// frame sent again, one edited on the way, and one of rank 0's own sent
// back to it are refused; the genuine next frame is taken.
func TestSessionRefusesReplayedEditedAndReflectedFrames(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	ctx := context.Background()
	report := HostReport{Rank: 1, Host: "h1", Error: "fine"}

	t.Run("replayed", func(t *testing.T) {
		r0, m, _, mw := session(t, key)
		require.NoError(t, m.Send(ctx, msgReport, report))
		var got HostReport
		require.NoError(t, r0.Recv(ctx, msgReport, &got, 0))
		_, err := mw.Conn.Write(mw.take()) // the same frame again
		require.NoError(t, err)
		assert.ErrorIs(t, r0.Recv(ctx, msgReport, &got, 0), ErrNotAuthentic)
	})
	t.Run("edited", func(t *testing.T) {
		r0, m, _, mw := session(t, key)
		var sink bytes.Buffer
		m.c = &recConn{Conn: &discardConn{Conn: mw.Conn, w: &sink}} // hold the frame back
		require.NoError(t, m.Send(ctx, msgReport, report))
		edited := bytes.Replace(sink.Bytes(), []byte(`"fine"`), []byte(`"FINE"`), 1)
		require.NotEqual(t, sink.Bytes(), edited)
		_, err := mw.Conn.Write(edited)
		require.NoError(t, err)
		var got HostReport
		assert.ErrorIs(t, r0.Recv(ctx, msgReport, &got, 0), ErrNotAuthentic)
	})
	t.Run("reflected", func(t *testing.T) {
		r0, m, r0w, mw := session(t, key)
		require.NoError(t, r0.Send(ctx, msgTask, Task{ID: 1, Kind: "stop"}))
		f, err := m.recvAny(ctx, time.Second)
		require.NoError(t, err)
		require.Equal(t, msgTask, f.Type)
		_, err = mw.Conn.Write(r0w.take()) // rank 0's frame, back to it
		require.NoError(t, err)
		_, err = r0.recvAny(ctx, time.Second)
		assert.ErrorIs(t, err, ErrNotAuthentic)
	})
	t.Run("genuine", func(t *testing.T) {
		r0, m, _, _ := session(t, key)
		for i := 0; i < 3; i++ {
			require.NoError(t, m.Send(ctx, msgReport, report))
			var got HostReport
			require.NoError(t, r0.Recv(ctx, msgReport, &got, 0))
			assert.Equal(t, report, got)
		}
	})
}

// discardConn writes into w instead of the connection.
type discardConn struct {
	net.Conn
	w io.Writer
}

func (c *discardConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// FuzzGreet: whatever a connection sends rank 0 after its challenge, greet
// returns (no panic, no hang) and never admits it: the challenge is fresh.
func FuzzGreet(f *testing.F) {
	f.Add(encodeFrame(msgHello, `{"rank":1,"size":2,"host":"a","nonce":"00"}`+string(make([]byte, 32))))
	f.Add(encodeFrame(msgHello, `{"rank":1,"size":2,"host":"a","nonce":"`+string(bytes.Repeat([]byte("ab"), 32))+`"}`+string(make([]byte, 32))))
	f.Add(encodeFrame(msgHello, `{}`))
	f.Add(encodeFrame(msgReport, `{"rank":1}`))
	f.Add([]byte("EKFL\x00\x03\x01\x00\x00\x00\x10\x00"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			defer b.Close()
			_, _ = readWireFrame(b) // the challenge
			_, _ = b.Write(in)
		}()
		_, err := greet(context.Background(), newPeerConn(a, time.Second), []byte("k"), 200*time.Millisecond)
		require.Error(t, err)
	})
}

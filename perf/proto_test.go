package perf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/connect"
)

func sampleMessages() []message {
	eps := endpointsMsg{{QPN: 0x12, PSN: 0xb91023, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 15}, MTU: 3, Addr: 0x55d03a2dc000, RKey: 0x2b3}}
	return []message{
		&HelloMsg{Device: "erdma_0", ClientDevice: "erdma_1", Transport: "roce", Method: connect.OOB, QPs: 16,
			Size: 65536, Duration: 5 * time.Second, Warmup: 2 * time.Second, Cooldown: 2 * time.Second, Limit: 14 * time.Second},
		&acceptMsg{Device: "erdma_0", Transport: "roce"},
		&eps,
		&startMsg{},
		&DoneMsg{Bytes: 1 << 30, Messages: 16384, Elapsed: time.Second, Counters: map[string]uint64{"hw_rx_bytes_cnt": 1 << 30}},
		&PeerError{Message: "no such device"},
		&LatencyHelloMsg{Device: "erdma_0", ClientDevice: "erdma_1", Transport: "roce", Method: connect.RDMACM, Size: 2,
			Iterations: 1000, Warmup: 16, Inline: 96, Limit: time.Hour},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		t.Run(m.msgType().String(), func(t *testing.T) {
			b, err := appendFrame(nil, m)
			require.NoError(t, err)
			got, err := readFrame(bytes.NewReader(b))
			require.NoError(t, err)
			assert.Equal(t, m, got)
		})
	}
}

// latencyHello is a LatencyHello frame with any field values (AppendFrame
// does not validate).
func latencyHello(iters uint32, size uint64) []byte {
	b, err := appendFrame(nil, &LatencyHelloMsg{Size: size, Iterations: iters})
	if err != nil {
		panic(err)
	}
	return b
}

func TestReadFrameRejects(t *testing.T) {
	good, err := appendFrame(nil, &startMsg{})
	require.NoError(t, err)
	hello, err := appendFrame(nil, sampleMessages()[0])
	require.NoError(t, err)
	withVersion := func(v uint16) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint16(b[4:], v)
		return b
	}
	oversized := bytes.Clone(good)
	binary.BigEndian.PutUint32(oversized[8:], maxPayload+1)
	badHello := bytes.Clone(hello)
	qpsAt := 12 + 1 + len("erdma_0") + 1 + len("erdma_1") + 1 + len("roce") + 1
	binary.BigEndian.PutUint32(badHello[qpsAt:], 0)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrProtocol},
		{"version mismatch", withVersion(2), ErrVersion},
		{"oversized frame", oversized, ErrProtocol},
		{"truncated payload", hello[:len(hello)-3], errors.New("")},
		{"unknown type", append(bytes.Clone(good[:6]), 99, 0, 0, 0, 0, 0), ErrProtocol},
		{"hello with zero QPs", badHello, ErrProtocol},
		{"latency hello without iterations", latencyHello(0, 2), ErrProtocol},
		{"latency hello of size 0", latencyHello(1000, 0), ErrProtocol},
		{"trailing bytes", append(append(bytes.Clone(good[:8]), 0, 0, 0, 1), 7), ErrProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := readFrame(bytes.NewReader(tc.in))
			require.Error(t, err)
			assert.Nil(t, m)
			if tc.want.Error() != "" {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := appendFrame(nil, m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("EKBW\x00\x01\x03\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := readFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		// Whatever decodes must encode again to a frame that decodes the same.
		b, err := appendFrame(nil, m)
		require.NoError(t, err)
		m2, err := readFrame(bytes.NewReader(b))
		require.NoError(t, err)
		require.Equal(t, m, m2)
	})
}

// startServer serves links on a loopback port until the test ends.
func startServer(t *testing.T, step time.Duration, links ...Link) (string, <-chan ServerTest) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tests := make(chan ServerTest, 16)
	srv := &Server{Links: links, StepTimeout: step, OnTest: func(st ServerTest) { tests <- st }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ln.Addr().String(), tests
}

func quickConfig() Config {
	return Config{Size: 4096, QPs: 2, Iterations: 200}
}

// goodClientWorks proves the server still serves after a bad client.
func goodClientWorks(t *testing.T, addr string, link *fakeLink) {
	t.Helper()
	c := &Client{Link: link, Addr: addr, Config: quickConfig()}
	rs, err := c.Run(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, uint64(400), rs[0].Messages)
}

func TestServerSurvivesBadClients(t *testing.T) {
	const step = 300 * time.Millisecond
	hello := func() []byte {
		b, err := appendFrame(nil, &HelloMsg{QPs: 2, Size: 4096, Iterations: 10, Method: connect.OOB})
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name    string
		client  func(t *testing.T, c net.Conn)
		wantErr string // in the error the client reads back ("" for none expected)
	}{
		{"garbage", func(t *testing.T, c net.Conn) {
			_, err := c.Write([]byte("hello server, are you there?\n"))
			require.NoError(t, err)
		}, "bad magic"},
		{"version mismatch", func(t *testing.T, c net.Conn) {
			b := hello()
			binary.BigEndian.PutUint16(b[4:], 7)
			_, err := c.Write(b)
			require.NoError(t, err)
		}, "peer speaks protocol version 7"},
		{"oversized frame", func(t *testing.T, c net.Conn) {
			b := hello()[:12]
			binary.BigEndian.PutUint32(b[8:], 1<<31)
			_, err := c.Write(b)
			require.NoError(t, err)
		}, "frame too large"},
		{"slowloris", func(t *testing.T, c net.Conn) {
			b := hello()
			for i := 0; i < 6; i++ { // one byte per 100 ms: the whole message is late
				if _, err := c.Write(b[i : i+1]); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}, "i/o timeout"},
		{"disconnect after hello", func(t *testing.T, c net.Conn) {
			_, err := c.Write(hello())
			require.NoError(t, err)
			m, err := readFrame(c)
			require.NoError(t, err)
			require.IsType(t, &acceptMsg{}, m)
			c.Close()
		}, ""},
		{"endpoints out of order", func(t *testing.T, c net.Conn) {
			b, err := appendFrame(nil, &startMsg{})
			require.NoError(t, err)
			_, err = c.Write(b)
			require.NoError(t, err)
		}, "expected hello, got start"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			link := newFakeLink("fake0", 10)
			addr, _ := startServer(t, step, link)
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			tc.client(t, c)
			if tc.wantErr != "" {
				require.NoError(t, c.SetReadDeadline(time.Now().Add(5*step)))
				for {
					m, err := readFrame(c)
					require.NoError(t, err, "the server must say why it hangs up")
					if pe, ok := m.(*PeerError); ok {
						assert.Contains(t, pe.Message, tc.wantErr)
						break
					}
				}
			}
			goodClientWorks(t, addr, link)
			assert.Eventually(t, func() bool { return link.OpenSessions() == 0 }, time.Second, 10*time.Millisecond)
		})
	}
}

func TestServerSurvivesClientVanishingMidTest(t *testing.T) {
	link := newFakeLink("fake0", 10)
	addr, tests := startServer(t, time.Second, link)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Size: 65536, QPs: 4, Duration: 10 * time.Second, Warmup: -1, Cooldown: -1}
	cfg.Progress = func(Progress) { cancel() } // vanish once writing is under way
	cfg.ProgressInterval = 50 * time.Millisecond
	c := &Client{Link: link, Addr: addr, Config: cfg}
	_, err := c.Run(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	st := <-tests
	require.Error(t, st.Err)
	assert.Contains(t, st.Err.Error(), "the client's done")
	goodClientWorks(t, addr, link)
	assert.Eventually(t, func() bool { return link.OpenSessions() == 0 }, time.Second, 10*time.Millisecond)
}

func TestClientSeesServerErrors(t *testing.T) {
	link := newFakeLink("fake0", 10)
	addr, _ := startServer(t, time.Second, link)
	c := &Client{Link: link, Addr: addr, ServerDevice: "erdma_9", Config: quickConfig()}
	_, err := c.Run(context.Background(), nil)
	require.ErrorIs(t, err, ErrPeer)
	assert.Contains(t, err.Error(), `device "erdma_9" is not served here`)
	assert.Equal(t, 0, link.OpenSessions())
}

func TestClientSeesGarbageServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2p1\r\n"))
		time.Sleep(time.Second)
	}()
	link := newFakeLink("fake0", 10)
	c := &Client{Link: link, Addr: ln.Addr().String(), Config: quickConfig()}
	_, err = c.Run(context.Background(), nil)
	require.ErrorIs(t, err, ErrProtocol)
	assert.Contains(t, err.Error(), "not an erdmakit bw peer")
}

func TestClientTimesOutOnSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			time.Sleep(2 * time.Second)
			c.Close()
		}
	}()
	cfg := quickConfig()
	cfg.StepTimeout = 200 * time.Millisecond
	c := &Client{Link: newFakeLink("fake0", 10), Addr: ln.Addr().String(), Config: cfg}
	start := time.Now()
	_, err = c.Run(context.Background(), nil)
	require.Error(t, err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	assert.Less(t, time.Since(start), time.Second)
}

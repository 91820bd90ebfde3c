package perf

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerCapsConcurrentTests: issue 12 item 7, over real sockets. With
// MaxTests 1, a second client asking for a test while one runs is refused
// at once with a clear "busy" message (it used to be served, each test
// holding QPs and a buffer for as long as its client asked); connections
// beyond MaxConns are told the same and closed; once the first test ends a
// new one runs.
func TestServerCapsConcurrentTests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	srv := &Server{Links: []Link{newFakeLink("fake0", 10)}, StepTimeout: 2 * time.Second, MaxTests: 1, MaxConns: 3}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	long := make(chan error, 1)
	go func() {
		c := &Client{Link: newFakeLink("fake1", 10), Addr: addr, Config: Config{Size: 4096, QPs: 1, Duration: 1500 * time.Millisecond}}
		_, err := c.Run(context.Background(), nil)
		long <- err
	}()
	time.Sleep(300 * time.Millisecond) // the long test is running

	start := time.Now()
	c := &Client{Link: newFakeLink("fake2", 10), Addr: addr, Config: quickConfig()}
	_, err = c.Run(context.Background(), nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrPeer), "%v", err)
	assert.Contains(t, err.Error(), "busy")
	assert.Contains(t, err.Error(), "--max-tests 1")
	assert.Less(t, time.Since(start), time.Second, "refused at once, not queued")

	// Connections beyond MaxConns (the long test holds one) are told too.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var busy int
	for i := 0; i < 4; i++ {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, nc)
	}
	for _, nc := range held {
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
		if m, err := readFrame(nc); err == nil {
			if pe, ok := m.(*PeerError); ok && assert.Contains(t, pe.Message, "busy") {
				busy++
			}
		}
	}
	assert.GreaterOrEqual(t, busy, 2, "connections over --max-conns are refused with a message")
	for _, nc := range held {
		nc.Close()
	}
	held = nil

	require.NoError(t, <-long)
	goodClientWorks(t, addr, newFakeLink("fake3", 10))
}

// TestServerFreesTheSlotBeforeTheLastReply: with MaxTests 1, a client that
// has its result may start its next test at once. The server used to send
// its last reply before it gave the slot back, and a client quick enough
// was told "busy" (seen in CI, between two tests of one client).
func TestServerFreesTheSlotBeforeTheLastReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := newFakeLink("fake0", 10)
	served.CloseDelay = 50 * time.Millisecond // the window the client used to hit
	srv := &Server{Links: []Link{served}, StepTimeout: 2 * time.Second, MaxTests: 1}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	link := newFakeLink("fake1", 10)
	for i := range 5 {
		c := &Client{Link: link, Addr: ln.Addr().String(), Config: Config{Size: 4096, QPs: 1, Iterations: 10}}
		_, err := c.Run(context.Background(), nil)
		require.NoError(t, err, "test %d", i)
		// A ping-pong needs both ends on one fake link (its buffers).
		lc := &LatencyClient{Link: served, Addr: ln.Addr().String(), Config: LatencyConfig{Size: 2, Iterations: 10}}
		_, err = lc.Run(context.Background(), nil)
		require.NoError(t, err, "latency test %d", i)
	}
}

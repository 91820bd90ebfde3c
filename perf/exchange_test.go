package perf

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Both sides of every test (bandwidth and latency) swap endpoints through
// one exchange: the client first, a wrong count is a protocol error that
// names the peer.
func TestExchangeClientFirstAndCountChecked(t *testing.T) {
	ctx := context.Background()
	open := func(name string, qps int) Session {
		s, err := newFakeLink(name, 1).Open(ctx, OpenConfig{QPs: qps, BufSize: 4096, TxDepth: 16})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cli := &conn{c: a, step: 300 * time.Millisecond}
	srv := &conn{c: b, step: 300 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- srv.exchange(ctx, open("s0", 2), 2, true) }()
	require.NoError(t, cli.exchange(ctx, open("c0", 2), 2, false))
	require.NoError(t, <-done)

	go func() { done <- srv.exchange(ctx, open("s1", 1), 1, true) }()
	err := cli.exchange(ctx, open("c1", 2), 2, false)
	require.Error(t, err, "the server waits for 1 endpoint, gets 2 and stops: the client times out")
	serr := <-done
	require.ErrorIs(t, serr, ErrProtocol)
	assert.Contains(t, serr.Error(), "client sent 2 endpoints for 1 QPs")
}

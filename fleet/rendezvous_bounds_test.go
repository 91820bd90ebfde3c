package fleet

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hugeHelloHeader announces a 4 MiB hello (the frame limit) and sends none
// of it: the old rank 0 allocated the whole payload up front.
func hugeHelloHeader() []byte {
	h := make([]byte, 12)
	copy(h, "EKFL")
	binary.BigEndian.PutUint16(h[4:], wireVersion)
	h[6] = byte(msgHello)
	binary.BigEndian.PutUint32(h[8:], maxPayload)
	return h
}

// TestRendezvousBoundedAndAuthenticated: issue 12 item 4, over real
// sockets. 200 connections announcing 4 MiB hellos cost rank 0 almost
// nothing (they are refused on the header), 100 silent connections neither
// hold the gathering nor crowd out real ranks, a forged hello for rank 1
// (no job secret) is refused and the real rank 1 still joins, and a second
// authenticated rank 1 is refused without evicting the first.
func TestRendezvousBoundedAndAuthenticated(t *testing.T) {
	key, src := JobSecret(func(k string) string {
		if k == "OMPI_MCA_orte_hnp_uri" {
			return "1741160448.0;tcp://192.0.2.2:41131"
		}
		return ""
	})
	require.NotNil(t, key)
	require.Equal(t, "OMPI_MCA_orte_hnp_uri", src)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	var (
		g    *gathering
		gerr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g, gerr = gather(context.Background(), l, 3, 6*time.Second, 2*time.Second, key)
	}()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = c.Write(hugeHelloHeader())
		require.NoError(t, err)
	}
	for i := 0; i < 100; i++ { // silent
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap growth under 200 oversized and 100 silent hellos: %d KiB", grew/1024)
	assert.Less(t, grew, int64(64<<20), "oversized hellos must not be allocated")

	// A forged hello (no secret) for rank 1 is refused...
	_, err = join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "forger"}, time.Second, time.Second, nil)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "not authenticated")
	// ... and one signed with another job's secret too.
	other, _ := JobSecret(func(k string) string {
		if k == SecretEnv {
			return "another job"
		}
		return ""
	})
	_, err = join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "forger"}, time.Second, time.Second, other)
	require.ErrorAs(t, err, &pe)
	// The real rank 1 joins; a second authenticated rank 1 is refused and
	// the first keeps its place.
	c1, err := join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "real-1"}, 2*time.Second, 2*time.Second, key)
	require.NoError(t, err)
	defer c1.Close()
	_, err = join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "dup-1"}, time.Second, time.Second, key)
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "joined twice")
	c2, err := join(context.Background(), addr, helloMsg{Rank: 2, Size: 3, Host: "real-2"}, 2*time.Second, 2*time.Second, key)
	require.NoError(t, err)
	defer c2.Close()

	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Gather hung")
	}
	require.NoError(t, gerr)
	defer g.Close()
	require.Len(t, g.Members, 2)
	assert.Equal(t, "real-1", g.Members[1].Host)
	assert.Equal(t, "real-2", g.Members[2].Host)
	assert.Empty(t, g.Missing)
	assert.LessOrEqual(t, len(g.Errors), maxErrors+1, "the error list is bounded")
	assert.GreaterOrEqual(t, g.Refused, 203)
}

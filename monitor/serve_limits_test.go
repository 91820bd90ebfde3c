package monitor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollectorSanitisesInvalidUTF8: issue 12 item 3. One fw_ver of
// "0.2.\xff\xfe" used to make MustNewConstMetric panic and the scrape lose
// every metric; now the label is made valid and the rest is served.
func TestCollectorSanitisesInvalidUTF8(t *testing.T) {
	snap := testSnapshot()
	snap.Inventory.Devices[0].FWVer = "0.2.\xff\xfe"
	snap.Inventory.Devices[0].Ports[0].Counters["bad\xffname"] = 7
	var logs bytes.Buffer
	c := NewCollector(func(context.Context) (*Snapshot, error) { return snap, nil }, time.Second).
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Serve(ctx, l, c) }()
	body := scrape(t, l.Addr().String(), 5*time.Second)
	assert.Contains(t, body, `erdmakit_port_stat_total{device="erdma_0",port="1",stat="hw_tx_bytes_cnt"} 12345`)
	assert.Contains(t, body, `fw_ver="0.2.`+"\uFFFD"+`"`)
	assert.Contains(t, body, `stat="bad`+"\uFFFD"+`name"`)
	assert.Contains(t, body, "erdmakit_scrape_dropped_metrics 0")
	assert.Contains(t, body, "erdmakit_doctor_status 2")
}

func scrape(t *testing.T, addr string, timeout time.Duration) string {
	t.Helper()
	cl := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(b)
}

// TestExporterUnderIdleAndSlowLoad: issue 12 item 3, over real sockets.
// Idle keep-alive and slow-body connections (more of them than the
// connection limit) are all closed by the server within its timeouts
// (they used to be held for 40-100 s), and a scrape made in the middle of
// the load answers.
func TestExporterUnderIdleAndSlowLoad(t *testing.T) {
	const attackers = 150 // of each kind
	c := NewCollector(func(context.Context) (*Snapshot, error) { return testSnapshot(), nil }, time.Second).
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := Limits{ReadHeader: time.Second, Read: 2 * time.Second, Write: 5 * time.Second, Idle: time.Second, MaxConns: 64}
	go func() { _ = ServeLimits(ctx, l, c, lim) }()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < attackers; i++ {
		// Idle keep-alive: one request answered, then silence.
		ic, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, ic)
		_, err = fmt.Fprintf(ic, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		// Slow body: headers promise 1 MiB, ten bytes come.
		sc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, sc)
		_, err = fmt.Fprintf(sc, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n0123456789")
		require.NoError(t, err)
	}
	start := time.Now()
	body := scrape(t, addr, 3*time.Second)
	assert.Contains(t, body, "erdmakit_up 1")
	t.Logf("scrape under %d idle and %d slow-body connections: %v", attackers, attackers, time.Since(start))

	// Every attacker's connection is closed by the server well within
	// Read + Idle (+ margin): reading it ends (EOF or reset), never times out.
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for _, cn := range conns {
		wg.Add(1)
		go func(cn net.Conn) {
			defer wg.Done()
			_ = cn.SetReadDeadline(time.Now().Add(8 * time.Second))
			_, err := io.Copy(io.Discard, bufio.NewReader(cn))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				held++
				mu.Unlock()
			}
		}(cn)
	}
	wg.Wait()
	assert.Zero(t, held, "connections still held by the server after its timeouts")
}

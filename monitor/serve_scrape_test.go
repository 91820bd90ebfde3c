package monitor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveTest serves a collector over snap on loopback with lim until the
// test ends; it returns the address.
func serveTest(t *testing.T, snap SnapshotFunc, timeout time.Duration, lim Limits) string {
	t.Helper()
	c := NewCollector(snap, timeout).WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ServeLimits(ctx, l, c, lim) }()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String()
}

// tryScrape is one normal scrape; it returns an error instead of failing.
func tryScrape(addr string, timeout time.Duration) error {
	cl := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "erdmakit_up 1") {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	return nil
}

// TestExporterFloodOfPartialHeadersKeepsScrapes: issue 27 item 5. A flood
// of connections that send part of a request's headers and stop (four
// loopback clients as fast as they can, each holding at most 100) goes on
// while 20 normal scrapes are made, each reading the host for 100 ms. The
// old listener closed "the oldest" connection for each newcomer, a scrape
// in progress included (5 of 20 lost in the report); now idle and
// header-incomplete connections go first and every scrape answers.
func TestExporterFloodOfPartialHeadersKeepsScrapes(t *testing.T) {
	snap := func(ctx context.Context) (*Snapshot, error) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return testSnapshot(), nil
	}
	addr := serveTest(t, snap, 5*time.Second, Limits{MaxConns: 64, ReadHeader: 5 * time.Second})

	stop, opened, wait := flood(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ", 100)
	time.Sleep(200 * time.Millisecond) // the flood is on
	start := time.Now()
	var failed []string
	for i := 0; i < 20; i++ {
		if err := tryScrape(addr, 5*time.Second); err != nil {
			failed = append(failed, err.Error())
		}
	}
	elapsed := time.Since(start)
	close(stop)
	wait()
	t.Logf("20 scrapes in %v under a flood of %d partial-header connections (%.0f/s)",
		elapsed, opened.Load(), float64(opened.Load())/(elapsed+200*time.Millisecond).Seconds())
	assert.Empty(t, failed, "scrapes lost under the flood")
}

// flood opens connections to addr from four clients as fast as they can,
// each sending req and holding at most hold of them, until stop is closed;
// wait waits for the clients to end.
func flood(addr, req string, hold int) (stop chan struct{}, opened *atomic.Int64, wait func()) {
	stop, opened = make(chan struct{}), new(atomic.Int64)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					continue
				}
				_, _ = c.Write([]byte(req))
				opened.Add(1)
				held = append(held, c)
				if len(held) > hold {
					held[0].Close()
					held = held[1:]
				}
			}
		}()
	}
	return stop, opened, wg.Wait
}

// TestExporterFloodOfScrapesKeepsScrapes: issue 27 item 24. Under a flood
// of complete GETs that never read their answer (four clients holding up to
// 3,000), 0 of 4 normal scrapes answered within 5 s; now the host is read
// once at a time for all of them, and 10 normal scrapes all answer.
func TestExporterFloodOfScrapesKeepsScrapes(t *testing.T) {
	var running, most atomic.Int64
	snap := func(ctx context.Context) (*Snapshot, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return testSnapshot(), nil
	}
	addr := serveTest(t, snap, 5*time.Second, Limits{})
	stop, opened, wait := flood(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 750)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	var failed []string
	var slowest time.Duration
	for i := 0; i < 10; i++ {
		s := time.Now()
		if err := tryScrape(addr, 5*time.Second); err != nil {
			failed = append(failed, err.Error())
		}
		slowest = max(slowest, time.Since(s))
	}
	elapsed := time.Since(start)
	close(stop)
	wait()
	t.Logf("10 scrapes in %v (slowest %v) under a flood of %d complete GETs; host reads at once: at most %d", elapsed, slowest, opened.Load(), most.Load())
	assert.Empty(t, failed, "scrapes lost under the flood")
	assert.EqualValues(t, 1, most.Load())
}

// TestExporterOneScrapeAtATime: issue 27 item 24. 40 scrapes at once used
// to read the host 40 times at once (448 handlers under the reported
// flood); now one read runs at a time and the scrapes that arrive during
// it share its result.
func TestExporterOneScrapeAtATime(t *testing.T) {
	var running, most, reads atomic.Int64
	snap := func(ctx context.Context) (*Snapshot, error) {
		n := running.Add(1)
		defer running.Add(-1)
		reads.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return testSnapshot(), nil
	}
	addr := serveTest(t, snap, 5*time.Second, Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- tryScrape(addr, 10*time.Second) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	t.Logf("40 concurrent scrapes: %d host reads, at most %d at once", reads.Load(), most.Load())
	assert.EqualValues(t, 1, most.Load(), "host reads at once")
	assert.LessOrEqual(t, reads.Load(), int64(4), "concurrent scrapes share a read")
}

// TestExporterServesGETOnly: issue 27 item 24. 300 slow-body POSTs (1 MiB
// announced, 10 bytes sent) each ran a scrape handler; now they get 405 at
// once without reading the host, and normal scrapes during them answer.
func TestExporterServesGETOnly(t *testing.T) {
	var reads atomic.Int64
	snap := func(context.Context) (*Snapshot, error) { reads.Add(1); return testSnapshot(), nil }
	addr := serveTest(t, snap, 5*time.Second, Limits{})

	resp, err := http.Post("http://"+addr+"/metrics", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = fmt.Fprintf(c, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n0123456789")
		require.NoError(t, err)
	}
	for i := 0; i < 4; i++ {
		assert.NoError(t, tryScrape(addr, 5*time.Second))
	}
	// Every POST is answered 405 (those the connection limit closed first
	// get nothing), none reads the host.
	answered := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(c, b, 12)
		if strings.HasPrefix(string(b[:n]), "HTTP/1.1 405") {
			answered++
		}
	}
	t.Logf("300 slow-body POSTs: %d answered 405, %d host reads (4 scrapes)", answered, reads.Load())
	assert.Positive(t, answered)
	assert.LessOrEqual(t, reads.Load(), int64(4), "a POST read the host")
}

// TestExporterScrapeCancelledWithItsConnection: issue 27 item 24. A read
// of the host went on after its client was gone (until the collector's
// 10 s timeout); now it is cancelled when the last request waiting for it
// goes away.
func TestExporterScrapeCancelledWithItsConnection(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan time.Time, 1)
	snap := func(ctx context.Context) (*Snapshot, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- time.Now()
		return nil, ctx.Err()
	}
	addr := serveTest(t, snap, 30*time.Second, Limits{})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the scrape did not start")
	}
	closed := time.Now()
	c.Close()
	select {
	case at := <-ended:
		t.Logf("read cancelled %v after its client closed", at.Sub(closed))
	case <-time.After(3 * time.Second):
		t.Fatal("the host read went on after its client closed")
	}
}

package monitor

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healthy unpacks the healthy fixture host into a temporary directory.
func healthy(t testing.TB) string { return fixture.Host(t, "ebmgn8is-healthy") }

// copyHost is a fresh copy of the healthy fixture that a test may change
// (its counters).
func copyHost(t *testing.T) string { return healthy(t) }

func counterPath(root, dev, name string) string {
	return filepath.Join(root, "sys/class/infiniband", dev, "ports/1/hw_counters", name)
}

func setCounter(t *testing.T, root, dev, name string, v uint64) {
	t.Helper()
	require.NoError(t, os.WriteFile(counterPath(root, dev, name), []byte(strconv.FormatUint(v, 10)+"\n"), 0o644))
}

// TestRecordedCounterSequence replays a sequence of counter snapshots on a
// recorded host: traffic, a meter drop, a driver reload (reset), a device
// that disappears.
func TestRecordedCounterSequence(t *testing.T) {
	root := copyHost(t)
	clock := t0
	s := HostSampler{Host: erdma.RecordedHost(root), Now: func() time.Time { return clock }}
	ctx := context.Background()

	setCounter(t, root, "erdma_0", "hw_tx_bytes_cnt", 1_000_000)
	setCounter(t, root, "erdma_0", "hw_bps_limit_drop_cnt", 0)
	a, err := s.Sample(ctx)
	require.NoError(t, err)
	require.Len(t, a.Ports, 2)

	clock = clock.Add(time.Second)
	setCounter(t, root, "erdma_0", "hw_tx_bytes_cnt", 1_000_000+12_500_000_000) // 100 Gbit/s
	setCounter(t, root, "erdma_0", "hw_bps_limit_drop_cnt", 17)
	b, err := s.Sample(ctx)
	require.NoError(t, err)
	iv := Diff(a, b)
	require.Len(t, iv.Ports, 2)
	assert.Equal(t, "erdma_0", iv.Ports[0].Device)
	assert.InDelta(t, 100, Gbps(iv.Ports[0].TxBytesPerS), 1e-6)
	assert.Equal(t, []CounterMove{{Name: "hw_bps_limit_drop_cnt", Delta: 17}}, iv.Ports[0].Moved)
	assert.InDelta(t, 0, Gbps(iv.Ports[1].TxBytesPerS), 1e-9, "erdma_1 idle")
	assert.Equal(t, []string{"erdma_0/1: hw_bps_limit_drop_cnt +17"}, iv.Problems())

	clock = clock.Add(time.Second)
	setCounter(t, root, "erdma_0", "hw_tx_bytes_cnt", 500) // driver reloaded
	c, err := s.Sample(ctx)
	require.NoError(t, err)
	iv = Diff(b, c)
	assert.InDelta(t, 500*8/1e9, Gbps(iv.Ports[0].TxBytesPerS), 1e-12, "a reset is not a huge rate")
	assert.Contains(t, iv.Ports[0].Resets, "hw_tx_bytes_cnt")
	assert.Equal(t, []string{"erdma_0/1: counters reset (driver reload or device reset): hw_tx_bytes_cnt"}, iv.Problems())

	clock = clock.Add(time.Second)
	require.NoError(t, os.Remove(filepath.Join(root, "sys/class/infiniband/erdma_1")))
	d, err := s.Sample(ctx)
	require.NoError(t, err)
	iv = Diff(c, d)
	assert.Equal(t, []string{"erdma_1/1"}, iv.Gone)
	assert.Len(t, iv.Ports, 1)
	assert.Equal(t, []string{"erdma_1/1: gone"}, iv.Problems())
}

func TestHostSamplerDeviceFilter(t *testing.T) {
	s := HostSampler{Host: erdma.RecordedHost(healthy(t)), Devices: []string{"erdma_1"}}
	smp, err := s.Sample(context.Background())
	require.NoError(t, err)
	require.Len(t, smp.Ports, 1)
	assert.Equal(t, "erdma_1", smp.Ports[0].Device)
	assert.Equal(t, "eth2", smp.Ports[0].Netdev)
}

func inventorySnapshot(root string) SnapshotFunc {
	return func(ctx context.Context) (*Snapshot, error) {
		inv, err := erdma.ReadInventory(ctx, erdma.RecordedHost(root), erdma.InventoryOptions{SkipTools: true})
		if err != nil {
			return nil, err
		}
		return &Snapshot{Inventory: inv}, nil
	}
}

// TestExporterScrapesRecordedHost scrapes the exporter over loopback with
// the healthy fixture as the host.
func TestExporterScrapesRecordedHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Serve(ctx, l, NewCollector(inventorySnapshot(healthy(t)), 5*time.Second)) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	assert.Contains(t, text, `erdmakit_port_active{device="erdma_0",port="1"} 1`)
	assert.Contains(t, text, `erdmakit_netdev_mtu_bytes{device="erdma_1",netdev="eth2"} 8500`)
	assert.Regexp(t, `erdmakit_port_stat_total\{device="erdma_0",port="1",stat="hw_tx_bytes_cnt"\} \d+`, text)
	assert.Contains(t, text, `erdmakit_device_info{device="erdma_0",driver="erdma",erdma="true"`)
	assert.Contains(t, text, "erdmakit_up 1")
}

// BenchmarkScrape is the cost of one scrape of the 2-device fixture: read
// the inventory (sysfs + recorded netdevs) and render the text format.
func BenchmarkScrape(b *testing.B) {
	h := Handler(NewCollector(inventorySnapshot(healthy(b)), 5*time.Second))
	req, _ := http.NewRequest("GET", "/metrics", nil)
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.code != 0 && w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

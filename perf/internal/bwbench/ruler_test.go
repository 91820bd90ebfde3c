package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadingIsTheSlopeOverTheMeasuredPhase(t *testing.T) {
	// Idle for 0.5 s, then 1 s of warm-up at 2000 pkt/s, 2 s measured at
	// 1000 pkt/s, 1 s of cool-down at 2000 pkt/s, idle again.
	var pts []rulerPoint
	var good float64
	for ms := 0; ms <= 5000; ms += 50 {
		tm := time.Duration(ms) * time.Millisecond
		pts = append(pts, rulerPoint{t: tm, good: int64(good)})
		switch {
		case ms >= 500 && ms < 1500, ms >= 3500 && ms < 4500:
			good += 100
		case ms >= 1500 && ms < 3500:
			good += 50
		}
	}
	r := reading(pts, time.Second, 2)
	require.NoError(t, r.Err)
	assert.InDelta(t, 1000, r.PPS, 1e-6, "only the measured phase, less the guards")
	assert.Equal(t, 2, r.Dropped)
	assert.InDelta(t, 1.5, r.Window.Seconds(), 0.11)

	r = reading(pts[:5], time.Second, 0)
	assert.ErrorContains(t, r.Err, "no packets")
	r = reading([]rulerPoint{{0, 0}, {time.Second, 10}, {2 * time.Second, 20}}, time.Second, 0)
	assert.ErrorContains(t, r.Err, "samples in the measured phase")
}

func TestGoodPacketsArePacketsPerWriteForEveryTool(t *testing.T) {
	// rxe0's counters over one run of 2048 writes per tool in the lab
	// (iterations mode, MTU 1024): 64 data packets and one ACK per 64 KiB
	// write, 4 and one per 4 KiB write, whatever the retransmissions.
	for _, c := range []struct {
		tool                 string
		size                 int
		rcvd, dup, oos, want int64
	}{
		{"erdmakit", 65536, 133500, 189, 0, 2048*65 + 2},
		{"ib_write_bw", 65536, 142687, 4783, 0, 2048*65 + 1},
		{"ib_write_bw", 4096, 10294, 27, 0, 2048 * 5},
		{"ib_write_bw -l 32", 4096, 10264, 12, 0, 2048 * 5},
	} {
		assert.Equal(t, c.want, goodPackets(c.rcvd, c.dup, c.oos), "%s %d", c.tool, c.size)
	}
}

func TestRulerSamplesTheCounters(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, erdma.ClassInfiniband, "rxe0", "ports", "1", "hw_counters")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name, v string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644))
	}
	write("rcvd_pkts", "1000")
	write("duplicate_request", "10")
	write("out_of_seq_request", "5")
	r := ruler{host: erdma.RecordedHost(root), dev: "rxe0", port: 1}
	stop := make(chan struct{})
	out := r.start(context.Background(), 0, stop)
	time.Sleep(3 * rulerEvery)
	close(stop)
	res := <-out
	assert.ErrorContains(t, res.Err, "no packets", "counters that never move: no traffic to measure")

	write("rcvd_pkts", "garbage")
	res = r.sample(context.Background(), 0, stop)
	assert.ErrorContains(t, res.Err, "rcvd_pkts")

	_, err := newRuler(context.Background(), "no-such-device-"+t.Name(), 1)
	assert.ErrorContains(t, err, "no rcvd_pkts counter")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	write("rcvd_pkts", "1000")
	res = r.sample(ctx, 0, make(chan struct{}))
	assert.ErrorIs(t, res.Err, context.Canceled)
}

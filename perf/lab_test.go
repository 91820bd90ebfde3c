//go:build lab && linux && cgo

package perf

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// Lab tests: `bw loopback` on Soft-RoCE (rxe0) under qemu; see internal/lab.

func openLabLink(t testing.TB) *VerbsLink {
	t.Helper()
	labtest.Require(t)
	l, err := OpenVerbsLink(labtest.Device(), VerbsOptions{GIDIndex: -1})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return l
}

func TestLabBwLoopbackMatchesCounters(t *testing.T) {
	l := openLabLink(t)
	ctx := labtest.Deadline(t)
	before, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"iterations 64KiB 2 QPs", Config{Size: 65536, QPs: 2, Iterations: 300}},
		{"duration 4KiB 4 QPs", Config{Size: 4096, QPs: 4, Duration: time.Second, Warmup: 300 * time.Millisecond, Cooldown: 300 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results, errs := Loopback(ctx, []Link{l}, tc.cfg, nil)
			require.Empty(t, errs)
			require.Len(t, results, 1)
			r := results[0]
			t.Logf("%s: %d msgs %.3f Gbit/s %.4f Mpps tx %+v rx %+v", tc.name, r.Messages, r.AvgGbps, r.Mpps, r.TX, r.RX)
			assert.Greater(t, r.AvgGbps, 0.0)
			assert.Equal(t, connect.OOB, r.Method)
			if tc.cfg.Iterations > 0 {
				assert.Equal(t, uint64(tc.cfg.Iterations*tc.cfg.QPs), r.Messages)
			}
			// rxe counts packets (sent_pkts, rcvd_pkts): at least one per write,
			// and a 64 KiB write is several MTU-sized packets.
			require.NotNil(t, r.TX, "rxe0 has hw_counters")
			assert.True(t, r.TX.OK, "%+v", r.TX)
			require.NotNil(t, r.RX)
			assert.True(t, r.RX.OK, "%+v", r.RX)
		})
	}
	after, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	assert.Equal(t, before, after, "every QP, CQ, MR and PD of the tests was released")
}

func TestLabBwFailedTestReleasesResources(t *testing.T) {
	l := openLabLink(t)
	ctx := labtest.Deadline(t)
	before, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	// The client vanishes mid-test: the server must clean up and go on.
	cctx, cancel := context.WithCancel(ctx)
	cfg := Config{Size: 65536, QPs: 4, Duration: 10 * time.Second, Warmup: -1, Cooldown: -1,
		ProgressInterval: 200 * time.Millisecond, Progress: func(Progress) { cancel() }}
	_, errs := Loopback(cctx, []Link{l}, cfg, nil)
	require.NotEmpty(t, errs)
	results, errs := Loopback(ctx, []Link{l}, Config{Size: 4096, QPs: 1, Iterations: 100}, nil)
	require.Empty(t, errs)
	require.Len(t, results, 1)
	assert.Eventually(t, func() bool {
		after, err := labtest.ResourcesOf(ctx, l.Device())
		return err == nil && assert.ObjectsAreEqual(before, after)
	}, 5*time.Second, 100*time.Millisecond)
}

// TestLab2HostBwServeRun is `bw serve` on VM a and `bw run a` on VM b: two
// hosts, each with its own rxe0, over the lab's Ethernet segment. Port 18610.
func TestLab2HostBwServeRun(t *testing.T) {
	labtest.Require2Host(t)
	l, err := OpenVerbsLink(labtest.Device(), VerbsOptions{GIDIndex: -1})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	ctx := labtest.Deadline(t)
	const port = 18610
	if labtest.IsServer() {
		c := labtest.Listen(t, port)
		var tests []ServerTest
		srv := &Server{Links: []Link{l}, OnTest: func(st ServerTest) { tests = append(tests, st) }}
		require.NoError(t, srv.ServeConn(ctx, c))
		require.Len(t, tests, 2, "one test per size")
		for _, st := range tests {
			require.NoError(t, st.Err)
			// The server's own device saw the writes arrive.
			p := proveRX(st.Counters, 0, st.Client.Messages)
			require.NotNil(t, p)
			assert.True(t, p.OK, "%+v", p)
		}
		return
	}
	c := labtest.Dial(t, port)
	cl := &Client{Link: l, Config: Config{QPs: 2, Iterations: 200}}
	results, err := cl.RunConn(ctx, c, []int{4096, 65536})
	require.NoError(t, err)
	require.Len(t, results, 2)
	for _, r := range results {
		t.Logf("%d B: %.3f Gbit/s tx %+v rx %+v", r.Size, r.AvgGbps, r.TX, r.RX)
		assert.Equal(t, uint64(400), r.Messages)
		require.NotNil(t, r.TX)
		assert.True(t, r.TX.OK)
		require.NotNil(t, r.RX, "the server reports its receive counters")
		assert.True(t, r.RX.OK)
	}
}

func TestLabBwLoopbackRDMACM(t *testing.T) {
	l := openLabLink(t)
	ctx := labtest.Deadline(t)
	before, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	var afterFirst labtest.Resources
	for round := range 2 {
		results, errs := Loopback(ctx, []Link{l}, Config{QPs: 2, Iterations: 200, Method: connect.RDMACM}, []int{4096, 65536})
		require.Empty(t, errs)
		require.Len(t, results, 2)
		for _, r := range results {
			t.Logf("rdma_cm %d B: %.3f Gbit/s tx %+v rx %+v", r.Size, r.AvgGbps, r.TX, r.RX)
			assert.Equal(t, connect.RDMACM, r.Method)
			assert.Equal(t, uint64(400), r.Messages)
			require.NotNil(t, r.TX)
			assert.True(t, r.TX.OK)
		}
		after, err := labtest.ResourcesOf(ctx, l.Device())
		require.NoError(t, err)
		t.Logf("round %d: resources before %v after %v", round, before, after)
		// librdmacm opens its own device context on first use and keeps it
		// for the life of the process: one more ctx, once. Everything else
		// (cm_id, qp, cq, mr, pd) is back to where it was.
		for k, v := range before {
			if k != "ctx" {
				assert.Equal(t, v, after[k], k)
			}
		}
		if round == 0 {
			afterFirst = after
		} else {
			assert.Equal(t, afterFirst, after, "a second round leaves nothing more behind")
		}
	}
}

// TestLabLatLoopback plays the latency ping-pong on rxe0 with itself, over
// both connection methods, and checks the statistics and that every
// resource is released.
func TestLabLatLoopback(t *testing.T) {
	l := openLabLink(t)
	ctx := labtest.Deadline(t)
	before, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	for _, m := range []connect.Method{connect.OOB, connect.RDMACM} {
		t.Run(m.String(), func(t *testing.T) {
			results, errs := LatencyLoopback(ctx, []Link{l}, LatencyConfig{Iterations: 300, Method: m}, []int{2, 4096})
			require.Empty(t, errs)
			require.Len(t, results, 2)
			for i, r := range results {
				t.Logf("%s %d B: min %.1f median %.1f avg %.1f p99 %.1f p99.9 %.1f max %.1f us", m, r.Size, r.MinUS, r.MedianUS, r.AvgUS, r.P99US, r.P999US, r.MaxUS)
				assert.Equal(t, []int{2, 4096}[i], r.Size)
				assert.Equal(t, m, r.Method)
				assert.Equal(t, 300, r.Iterations)
				assert.Len(t, r.Samples, 300)
				assert.Equal(t, 0, r.Inline, "ib_write_lat sends nothing inline on rxe")
				assert.Greater(t, r.MinUS, 0.0)
				assert.LessOrEqual(t, r.MinUS, r.MedianUS)
				assert.LessOrEqual(t, r.MedianUS, r.P99US)
				assert.LessOrEqual(t, r.P99US, r.P999US)
				assert.LessOrEqual(t, r.P999US, r.MaxUS)
			}
		})
	}
	after, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	for k, v := range before {
		if k != "ctx" { // librdmacm's own context, once per process (see TestLabBwLoopbackRDMACM)
			assert.Equal(t, v, after[k], k)
		}
	}
}

// TestLabLatCancelled: a context cancelled during the C ping-pong (here
// from the progress report, between runs, and from a timer, mid-run) ends
// the test on both sides at once with the context's error, and every
// resource is released.
func TestLabLatCancelled(t *testing.T) {
	l := openLabLink(t)
	ctx := labtest.Deadline(t)
	before, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	for _, mid := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		cfg := LatencyConfig{Iterations: MaxLatencyIterations, Warmup: -1}
		if mid {
			time.AfterFunc(500*time.Millisecond, cancel)
		} else {
			cfg.ProgressInterval = 200 * time.Millisecond
			cfg.Progress = func(p LatencyProgress) {
				if p.Done > 0 {
					cancel()
				}
			}
		}
		start := time.Now()
		_, errs := LatencyLoopback(cctx, []Link{l}, cfg, []int{2})
		cancel()
		require.NotEmpty(t, errs)
		assert.ErrorIs(t, errs[0], context.Canceled)
		assert.Less(t, time.Since(start), 30*time.Second)
	}
	after, err := labtest.ResourcesOf(ctx, l.Device())
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// TestLab2HostLat is `bw serve` on VM a and `bw lat a` on VM b: the
// ping-pong across the lab's Ethernet segment, rxe0 to rxe0. Port 18611.
func TestLab2HostLat(t *testing.T) {
	labtest.Require2Host(t)
	l, err := OpenVerbsLink(labtest.Device(), VerbsOptions{GIDIndex: -1})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	ctx := labtest.Deadline(t)
	const port = 18611
	if labtest.IsServer() {
		c := labtest.Listen(t, port)
		var tests []ServerTest
		srv := &Server{Links: []Link{l}, OnTest: func(st ServerTest) { tests = append(tests, st) }}
		require.NoError(t, srv.ServeConn(ctx, c))
		require.Len(t, tests, 2, "one test per size")
		for _, st := range tests {
			require.NoError(t, st.Err)
			require.NotNil(t, st.Latency)
			assert.Equal(t, uint64(st.Latency.Iterations+st.Latency.Warmup), st.Client.Messages)
		}
		return
	}
	c := labtest.Dial(t, port)
	cl := &LatencyClient{Link: l, Config: LatencyConfig{Iterations: 300}}
	results, err := cl.RunConn(ctx, c, []int{2, 4096})
	require.NoError(t, err)
	require.Len(t, results, 2)
	for _, r := range results {
		t.Logf("%d B across two VMs: min %.1f median %.1f p99 %.1f max %.1f us", r.Size, r.MinUS, r.MedianUS, r.P99US, r.MaxUS)
		assert.Equal(t, connect.OOB, r.Method)
		assert.Equal(t, 300, r.Iterations)
		assert.Greater(t, r.MinUS, 0.0)
		assert.LessOrEqual(t, r.MedianUS, r.MaxUS)
	}
}

// BenchmarkLabPingPong is one round trip of the latency loop on rxe0 in
// loopback (each b.N a whole test, connection set-up included in ns/op):
// us/one-way is the median one-way latency.
func BenchmarkLabPingPong(b *testing.B) {
	l := openLabLink(b)
	ctx := labtest.Deadline(b)
	for _, size := range []int{2, 4096} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			results, errs := LatencyLoopback(ctx, []Link{l}, LatencyConfig{Iterations: max(b.N, 2), Warmup: -1}, []int{size})
			require.Empty(b, errs)
			b.ReportMetric(results[0].MedianUS, "us/one-way")
		})
	}
}

//go:build lab && linux && cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// TestLabBwLoopbackCLI runs `erdmakit bw loopback` on the lab's rxe0 and
// checks its JSON against the device counters it reports.
func TestLabBwLoopbackCLI(t *testing.T) {
	labtest.Require(t)
	code, out, stderr := runCLI("bw", "loopback", "--json", "-d", labtest.Device(), "-q", "2",
		"--sizes", "4K,64K", "-D", "1s", "--warmup", "300ms", "--cooldown", "300ms")
	require.Equal(t, ExitOK, code, "stderr: %s", stderr)
	var rep perf.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "ok", string(rep.Status))
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		assert.Equal(t, labtest.Device(), r.Device)
		assert.Greater(t, r.AvgGbps, 0.0)
		assert.InDelta(t, float64(r.Bytes)*8/r.DurationS/1e9, r.AvgGbps, 1e-9)
		require.NotNil(t, r.TX)
		require.NotNil(t, r.RX)
		// rxe counts packets: at least one per write, sent and received.
		assert.Equal(t, "packets", r.TX.Unit)
		assert.GreaterOrEqual(t, r.TX.Delta, r.TotalMessages)
		assert.GreaterOrEqual(t, r.RX.Delta, r.TotalMessages)
	}
	// Below an impossible expectation: exit 1 (warn).
	code, _, _ = runCLI("bw", "loopback", "-d", labtest.Device(), "-n", "100", "--expect-gbps", "10000")
	assert.Equal(t, ExitWarn, code)
}

// TestLabBwLatCLI runs `erdmakit bw lat` (loopback on rxe0, both connection
// methods) and `erdmakit perftest lat` (ib_write_lat) and checks their JSON.
func TestLabBwLatCLI(t *testing.T) {
	labtest.Require(t)
	svg := filepath.Join(t.TempDir(), "lat.svg")
	for _, conn := range []string{"oob", "rdma_cm"} {
		code, out, stderr := runCLI("bw", "lat", "--json", "-d", labtest.Device(), "-n", "200", "--sizes", "2,4K", "--conn", conn, "--plot", svg)
		require.Equal(t, ExitOK, code, "stderr: %s", stderr)
		var rep perf.LatencyReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		assert.Equal(t, "ok", string(rep.Status))
		require.Len(t, rep.Results, 2)
		for _, r := range rep.Results {
			t.Logf("bw lat %s %d B: median %.1f us", conn, r.Size, r.MedianUS)
			assert.Equal(t, labtest.Device(), r.Device)
			assert.Equal(t, conn, r.Method.String())
			assert.Equal(t, 200, r.Iterations)
			assert.Greater(t, r.MinUS, 0.0)
			assert.LessOrEqual(t, r.MedianUS, r.MaxUS)
		}
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
	// Above an impossible expectation: exit 1 (warn).
	code, _, _ := runCLI("bw", "lat", "-d", labtest.Device(), "-n", "50", "--expect-us", "0.001")
	assert.Equal(t, ExitWarn, code)

	code, out, stderr := runCLI("perftest", "lat", "--json", "-d", labtest.Device(), "-x", strconv.Itoa(labtest.GIDIndex()), "-n", "200", "-p", "18530")
	require.Equal(t, ExitOK, code, "stderr: %s", stderr)
	var sum perftest.LatencySummary
	require.NoError(t, json.Unmarshal([]byte(out), &sum))
	t.Logf("perftest lat: median %.1f us", sum.MedianUS)
	assert.Greater(t, sum.MedianUS, 0.0)
	require.Len(t, sum.Runs, 1)
	require.NotNil(t, sum.Runs[0].Client)
	assert.Equal(t, "RDMA_Write Latency Test", sum.Runs[0].Client.Test)
}

// TestLab2HostBwLatCLI is `erdmakit bw serve` on VM a and `erdmakit bw lat
// a` on VM b (ports 18613; 18614 tells a that b is done).
func TestLab2HostBwLatCLI(t *testing.T) {
	labtest.Require2Host(t)
	const port, done = 18613, 18614
	if labtest.IsServer() {
		ctx, cancel := context.WithCancel(labtest.Deadline(t))
		defer cancel()
		g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		root := newRootCmd(g)
		root.SetArgs([]string{"bw", "serve", "-d", labtest.Device(), "-p", strconv.Itoa(port)})
		served := make(chan error, 1)
		go func() { served <- root.ExecuteContext(ctx) }()
		labtest.Listen(t, done).Close()
		cancel()
		require.NoError(t, <-served)
		return
	}
	defer func() { labtest.Dial(t, done).Close() }() // after the test, not now
	var (
		code        int
		out, stderr string
	)
	for try := 0; try < 60; try++ { // until a's server listens
		code, out, stderr = runCLI("bw", "lat", labtest.Peer(), "-p", strconv.Itoa(port), "-d", labtest.Device(), "-n", "100", "--sizes", "2,4K", "--json")
		if code == ExitOK || !strings.Contains(out+stderr, "connecting to the bw server") { // --json: errors in the report
			break
		}
		time.Sleep(time.Second)
	}
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	var rep perf.LatencyReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		t.Logf("bw lat across two VMs, %d B: median %.1f us", r.Size, r.MedianUS)
		assert.Equal(t, labtest.Device(), r.ServerDevice)
		assert.Equal(t, 100, r.Iterations)
		assert.Greater(t, r.MinUS, 0.0)
	}
}

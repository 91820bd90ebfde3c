//go:build lab && linux

package perftest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// TestLabPerftestLoopback runs the real Debian ib_write_bw pair on the lab's
// rxe0 through the runner and parses both sides.
func TestLabPerftestLoopback(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	runs := RunWriteBW(ctx, Options{Devices: []string{labtest.Device()}, QPs: 2, Size: 4096, Iterations: 2000,
		GIDIndex: labtest.GIDIndex(), Port: 18520, Timeout: 90 * time.Second})
	require.Len(t, runs, 1)
	r := runs[0]
	require.Empty(t, r.Error)
	require.NotNil(t, r.Client)
	assert.True(t, r.Client.OK(), "%+v", r.Client)
	require.NotEmpty(t, r.Client.Results)
	assert.Equal(t, int64(4096), r.Client.Results[0].Bytes)
	assert.Greater(t, r.Client.Results[0].BWAvgGbps, 0.0)
	assert.Equal(t, 2, r.Client.QPs)
	require.NotNil(t, r.Server)
}

// TestLabPerftestLat runs the real Debian ib_write_lat pair on rxe0 through
// the runner (loopback, out of band) and parses both sides' tables.
func TestLabPerftestLat(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	runs := RunWriteLat(ctx, Options{Devices: []string{labtest.Device()}, Size: 2, Iterations: 300,
		GIDIndex: labtest.GIDIndex(), Port: 18521, Timeout: 90 * time.Second})
	require.Len(t, runs, 1)
	r := runs[0]
	require.Empty(t, r.Error)
	require.NotNil(t, r.Client)
	assert.True(t, r.Client.OK(), "%+v", r.Client)
	assert.Equal(t, "RDMA_Write Latency Test", r.Client.Test)
	require.Len(t, r.Client.Latency, 1)
	x := r.Client.Latency[0]
	t.Logf("ib_write_lat 2 B on rxe0: min %.2f typical %.2f p99 %.2f max %.2f us", x.MinUS, x.TypicalUS, x.P99US, x.MaxUS)
	assert.Equal(t, int64(2), x.Bytes)
	assert.Equal(t, int64(300), x.Iterations)
	assert.Greater(t, x.TypicalUS, 0.0)
	assert.LessOrEqual(t, x.MinUS, x.TypicalUS)
	require.NotNil(t, r.Server)
	s := JudgeLatency(runs, 0, false)
	assert.Equal(t, "ok", string(s.Status))
	assert.Equal(t, x.TypicalUS, s.MedianUS)
}

// TestLab2HostPerftestLat is ib_write_lat across the two VMs: servers on a
// (ServeWriteLat), the client on b (RunWriteLat against a). Port 18612.
func TestLab2HostPerftestLat(t *testing.T) {
	labtest.Require2Host(t)
	ctx := labtest.Deadline(t)
	o := Options{Devices: []string{labtest.Device()}, Iterations: 300, GIDIndex: labtest.GIDIndex(), Port: 18612,
		Timeout: 120 * time.Second, ConnectRetries: 30}
	if labtest.IsServer() {
		runs := ServeWriteLat(ctx, o)
		require.Len(t, runs, 1)
		require.Empty(t, runs[0].Error)
		require.NotNil(t, runs[0].Server)
		assert.True(t, runs[0].Server.OK(), "%+v", runs[0].Server)
		return
	}
	o.Server = labtest.Peer()
	runs := RunWriteLat(ctx, o)
	require.Len(t, runs, 1)
	r := runs[0]
	require.Empty(t, r.Error)
	require.NotNil(t, r.Client)
	require.Len(t, r.Client.Latency, 1)
	x := r.Client.Latency[0]
	t.Logf("ib_write_lat 2 B across two VMs: typical %.2f us, %d attempts", x.TypicalUS, r.Attempts)
	assert.Greater(t, x.TypicalUS, 0.0)
	assert.Equal(t, "ok", string(JudgeLatency(runs, 0, false).Status))
}

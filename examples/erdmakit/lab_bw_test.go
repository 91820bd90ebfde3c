//go:build lab && linux && cgo

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/perf"
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

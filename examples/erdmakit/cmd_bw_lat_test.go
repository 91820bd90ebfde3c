package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/perf"
)

func TestBwLatLoopbackEmulated(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "lat.svg")
	tests := []struct {
		name  string
		args  []string
		code  int
		sizes []int
	}{
		{"ok, ib_write_lat's default size", []string{"-n", "50"}, ExitOK, []int{2}},
		{"a median above the expectation warns", []string{"-n", "50", "--emulate-latency", "20us", "--expect-us", "5"}, ExitWarn, []int{2}},
		{"within the expectation", []string{"-n", "50", "--expect-us", "100000"}, ExitOK, []int{2}},
		{"sizes, rdma_cm named, with a histogram", []string{"-n", "30", "--sizes", "2,4K", "--plot", svg, "--warmup", "0"}, ExitOK, []int{2, 4096}},
		{"bad size is a usage error", []string{"-s", "lots"}, ExitUnknown, nil},
		{"zero iterations is a usage error", []string{"-n", "0"}, ExitUnknown, nil},
		{"too many iterations is a usage error", []string{"-n", "99999999"}, ExitUnknown, nil},
		{"--rdma-cm against --conn oob is a usage error", []string{"-R", "--conn", "oob"}, ExitUnknown, nil},
		{"bad inline is a usage error", []string{"-I", "-5"}, ExitUnknown, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bw", "lat", "--json", "--emulate-gbps", "10"}, tc.args...)
			code, out, stderr := runCLI(args...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			if tc.code == ExitUnknown {
				assert.Contains(t, stderr, "erdmakit:")
				return
			}
			var rep perf.LatencyReport
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			require.Len(t, rep.Results, len(tc.sizes))
			for i, r := range rep.Results {
				assert.Equal(t, tc.sizes[i], r.Size)
				assert.Equal(t, "emulated0", r.Device)
				assert.Greater(t, r.MedianUS, 0.0)
				assert.LessOrEqual(t, r.MinUS, r.MedianUS)
				assert.LessOrEqual(t, r.P99US, r.MaxUS)
			}
		})
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
	assert.Contains(t, string(b), "emulated0 4KiB: median")
}

func TestBwLatTable(t *testing.T) {
	code, out, stderr := runCLI("bw", "lat", "--emulate-gbps", "10", "-n", "20", "--expect-us", "100000")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "MEDIAN_US")
	assert.Contains(t, out, "P99.9_US")
	assert.Contains(t, out, "emulated0")
	assert.Contains(t, out, "status: ok (expected a median of at most 100000.00 us)")
}

func TestBwLatNoServer(t *testing.T) {
	code, _, stderr := runCLI("bw", "lat", "127.0.0.1:1", "--emulate-gbps", "10", "-n", "5", "--step-timeout", "1s")
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, stderr, "connecting to the bw server")
}

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// The stand-in ib_write_bw of package perftest's tests prints recorded logs.
func fakePerftest(t *testing.T, mode string) string {
	t.Helper()
	bin := fixture.Script(t, "../../perf/perftest/testdata/fake_ib_write_bw") // runs without the exec bit a module zip drops
	t.Setenv("FAKE_PERFTEST_MODE", mode)
	t.Setenv("FAKE_PERFTEST_STATE", filepath.Join(t.TempDir(), "state"))
	return bin
}

func TestPerftestCommand(t *testing.T) {
	tests := []struct {
		name string
		mode string
		args []string
		code int
		runs int
	}{
		{"two devices in parallel", "ok", []string{"-d", "rxe0", "-d", "rxe1"}, ExitOK, 2},
		{"below expectation", "ok", []string{"-d", "rxe0", "--expect-gbps", "10"}, ExitWarn, 1},
		{"client fails", "fail", []string{"-d", "rxe0"}, ExitFail, 1},
		{"bad size", "ok", []string{"-d", "rxe0", "-s", "huge"}, ExitUnknown, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin := fakePerftest(t, tc.mode)
			code, out, stderr := runCLI(append([]string{"perftest", "--json", "--binary", bin}, tc.args...)...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			if code == ExitUnknown {
				return
			}
			var rep perftest.Summary
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			assert.Len(t, rep.Runs, tc.runs)
			if code == ExitOK {
				assert.InDelta(t, 0.58*float64(len(rep.Runs)), rep.TotalGbps, 1e-9)
			}
		})
	}
}

func TestPerftestLatCommand(t *testing.T) {
	tests := []struct {
		name string
		mode string
		args []string
		code int
	}{
		{"two devices", "lat", []string{"-d", "rxe0", "-d", "rxe1"}, ExitOK},
		{"median above the expectation", "lat", []string{"-d", "rxe0", "--expect-us", "1"}, ExitWarn},
		{"a bandwidth log is no latency result", "ok", []string{"-d", "rxe0"}, ExitFail},
		{"client fails", "fail", []string{"-d", "rxe0"}, ExitFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin := fakePerftest(t, tc.mode)
			code, out, stderr := runCLI(append([]string{"perftest", "lat", "--json", "--binary", bin}, tc.args...)...)
			require.Equal(t, tc.code, code, "stderr: %s", stderr)
			var rep perftest.LatencySummary
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			if tc.mode == "lat" {
				assert.InDelta(t, 1.47, rep.MedianUS, 1e-9)
				require.NotNil(t, rep.Runs[0].Client)
				assert.Equal(t, "RDMA_Write Latency Test", rep.Runs[0].Client.Test)
			}
		})
	}
	bin := fakePerftest(t, "lat")
	code, out, _ := runCLI("perftest", "lat", "--binary", bin, "-d", "rxe0")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "TYPICAL_US")
	assert.Contains(t, out, "status: ok (median 1.47 us)")
}

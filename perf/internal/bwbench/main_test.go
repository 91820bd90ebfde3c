package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/internal/benchstat"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMediansLeaveFailedRunsOut(t *testing.T) {
	ss := []sample{{Tool: "erdmakit", Gbps: 1, Mpps: 2}, {Tool: "erdmakit", Gbps: 3, Mpps: 4}, {Tool: "erdmakit", Gbps: 99, Err: "x"},
		{Tool: "ib_write_bw", Gbps: 5, Mpps: 6}}
	g, m := medians(ss, "erdmakit")
	assert.InDelta(t, 2, g, 1e-9)
	assert.InDelta(t, 3, m, 1e-9)
	g, _ = medians(ss, "other")
	assert.Zero(t, g)
}

func TestRoundRatiosScoreTheControlAsOurs(t *testing.T) {
	var sr roundRatios
	sr.add(map[string]float64{"erdmakit": 1.0, "ib_write_bw": 0.8, plTool: 1.25, controlTool: 1.0})
	sr.add(map[string]float64{"erdmakit": 1.0, "ib_write_bw": 0.5, controlTool: 1.1}) // -l failed: the better is plain
	sr.add(map[string]float64{"ib_write_bw": 1, plTool: 1, controlTool: 1})           // ours failed
	assert.InDeltaSlice(t, []float64{1.25, 2}, sr.Perftest, 1e-9)
	assert.InDeltaSlice(t, []float64{0.8}, sr.PostList, 1e-9)
	assert.InDeltaSlice(t, []float64{0.8, 2}, sr.Best, 1e-9)
	assert.InDeltaSlice(t, []float64{0.8, 2.2, 1}, sr.ControlBest, 1e-9, "the control against the same two as ours")
	assert.InDeltaSlice(t, []float64{1, 1 / 1.1}, sr.OursControl, 1e-9)
}

func TestSteadyRoundsLeaveSlowRunsOut(t *testing.T) {
	steady := func(before, after float64) bool { return benchstat.Steady(before, after, 1000, 0.9) }
	assert.True(t, benchstat.SteadyRound([]sample{{CalibBefore: 1000, CalibAfter: 950}, {CalibBefore: 950, CalibAfter: 995}}, sample.calibrations, steady))
	assert.False(t, benchstat.SteadyRound([]sample{{CalibBefore: 1000, CalibAfter: 950}, {CalibBefore: 950, CalibAfter: 600}}, sample.calibrations, steady),
		"one run with a slow calibration after it disturbs the round")
	ss := []sample{{Tool: "erdmakit", Gbps: 1, Mpps: 1}, {Tool: "erdmakit", Gbps: 0.3, Mpps: 0.3, Disturbed: true}, {Tool: "erdmakit", Gbps: 2, Mpps: 2}}
	g, _ := medians(ss, "erdmakit")
	assert.InDelta(t, 1.5, g, 1e-9, "a disturbed round's run is not in the medians")
	var off benchstat.Calibrator
	assert.True(t, benchstat.SteadyRound([]sample{{CalibBefore: 1, CalibAfter: 1}}, sample.calibrations, off.Steady), "off: every round is kept")
}

func TestScoreJudgesRoundsAgainAtTheEnd(t *testing.T) {
	run := func(rep int, tool string, mpps, cal float64) sample {
		return sample{Tool: tool, Rep: rep, Mpps: mpps, Gbps: mpps, CalibBefore: cal, CalibAfter: cal}
	}
	sr := sizeResult{Samples: []sample{
		run(1, "erdmakit", 0.6, 600), run(1, "ib_write_bw", 0.5, 600), // slow: looked steady against the first calibrations
		run(2, "erdmakit", 1.0, 1000), run(2, "ib_write_bw", 0.8, 1000),
		run(3, "erdmakit", 1.1, 1000), run(3, "ib_write_bw", 1.0, 990),
	}}
	sr.score(func(before, after float64) bool { return benchstat.Steady(before, after, 1000, 0.9) }, false)
	assert.Equal(t, []int{1}, sr.Disturbed)
	assert.True(t, sr.Samples[0].Disturbed)
	assert.False(t, sr.Samples[2].Disturbed)
	assert.InDeltaSlice(t, []float64{1.25, 1.1}, sr.Own.Perftest, 1e-9)
	assert.InDelta(t, 1.05, sr.OursGbps, 1e-9, "medians over the steady rounds only")
	assert.Equal(t, "ib_write_bw", sr.BetterSetting)
}

func TestRunOursProcessReadsTheCLIsJSON(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	fake := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho \"$@\" > "+args+"\n"+body), 0o755))
		return p
	}
	ok := fake("ok", `echo '{"status":"ok","results":[{"device":"rxe0","bw_avg_gbps":0.11,"msg_rate_mpps":0.0034}]}'`)
	s := runOursProcess(context.Background(), ok, "rxe0", 1, 4096, 16, 8, 2*time.Second, time.Second, 8, 0)
	assert.Empty(t, s.Err)
	assert.Equal(t, "erdmakit", s.Tool)
	assert.InDelta(t, 0.11, s.Gbps, 1e-9)
	assert.InDelta(t, 0.0034, s.Mpps, 1e-9)
	got, err := os.ReadFile(args)
	require.NoError(t, err)
	assert.Equal(t, "bw loopback --json -d rxe0 -x 1 -q 16 -t 8 -s 4096 -D 2s --warmup 1s --cooldown 1s -l 8\n", string(got))

	for name, body := range map[string]string{
		"garbage": "echo not json",
		"none":    `echo '{"results":[]}'`,
		"failing": "echo boom >&2; exit 2",
	} {
		s := runOursProcess(context.Background(), fake(name, body), "rxe0", -1, 4096, 1, 128, time.Second, time.Second, 0, 0)
		assert.NotEmpty(t, s.Err, name)
		assert.Zero(t, s.Gbps, name)
	}
}

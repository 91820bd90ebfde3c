package main

import (
	"testing"

	"github.com/erdmakit/erdmakit/internal/benchstat"

	"github.com/stretchr/testify/assert"
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

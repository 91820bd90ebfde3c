package main

import (
	"testing"

	"github.com/erdmakit/erdmakit/internal/benchstat"

	"github.com/stretchr/testify/assert"
)

func TestMedianOfLeavesFailedRunsOut(t *testing.T) {
	ss := []sample{{Tool: "erdmakit", MedianUS: 10}, {Tool: "erdmakit", MedianUS: 12}, {Tool: "erdmakit", MedianUS: 99, Err: "x"},
		{Tool: "ib_write_lat", MedianUS: 11}}
	assert.InDelta(t, 11, medianOf(ss, "erdmakit"), 1e-9, "failed runs left out")
	assert.InDelta(t, 11, medianOf(ss, "ib_write_lat"), 1e-9)
	assert.Zero(t, medianOf(ss, "other"))
}

func TestSteadyRoundsLeaveSlowRunsOut(t *testing.T) {
	steady := func(before, after float64) bool { return benchstat.Steady(before, after, 1000, 0.9) }
	assert.True(t, benchstat.SteadyRound([]sample{{CalibBefore: 1000, CalibAfter: 950}, {CalibBefore: 950, CalibAfter: 995}}, sample.calibrations, steady))
	assert.False(t, benchstat.SteadyRound([]sample{{CalibBefore: 1000, CalibAfter: 700}, {CalibBefore: 700, CalibAfter: 995}}, sample.calibrations, steady),
		"one run with a slow calibration disturbs the round")
	ss := []sample{{Tool: "erdmakit", MedianUS: 10}, {Tool: "erdmakit", MedianUS: 30, Disturbed: true}, {Tool: "erdmakit", MedianUS: 12}}
	assert.InDelta(t, 11, medianOf(ss, "erdmakit"), 1e-9, "a disturbed round's run is not in the median")
	var off benchstat.Calibrator
	assert.True(t, benchstat.SteadyRound([]sample{{CalibBefore: 1, CalibAfter: 1}}, sample.calibrations, off.Steady), "off: every round is kept")
}

func TestScoreJudgesRoundsAgainAtTheEnd(t *testing.T) {
	run := func(rep int, tool string, us, cal float64) sample {
		return sample{Tool: tool, Rep: rep, MedianUS: us, CalibBefore: cal, CalibAfter: cal}
	}
	sr := sizeResult{Samples: []sample{
		run(1, "erdmakit", 500, 600), run(1, "ib_write_lat", 300, 600), // slow: looked steady against the first calibrations
		run(2, "erdmakit", 300, 1000), run(2, "ib_write_lat", 310, 1000),
		run(3, "erdmakit", 320, 1000), run(3, "ib_write_lat", 320, 990),
	}}
	sr.score(func(before, after float64) bool { return benchstat.Steady(before, after, 1000, 0.9) }, []string{"erdmakit", "ib_write_lat"})
	assert.Equal(t, []int{1}, sr.Disturbed)
	assert.True(t, sr.Samples[1].Disturbed)
	assert.InDeltaSlice(t, []float64{300.0 / 310, 1}, sr.Rounds, 1e-9)
	assert.InDelta(t, 310, sr.OursUS, 1e-9, "medians over the steady rounds only")
}

func TestScoreWithControl(t *testing.T) {
	run := func(rep int, tool string, us float64) sample {
		return sample{Tool: tool, Rep: rep, MedianUS: us, P99US: 2 * us}
	}
	sr := sizeResult{Samples: []sample{
		run(1, "erdmakit", 12), run(1, "ib_write_lat", 9), run(1, controlTool, 16),
		run(2, "erdmakit", 10), run(2, "ib_write_lat", 10), run(2, controlTool, 10),
		run(3, "erdmakit", 11), run(3, "ib_write_lat", 10), sample{Tool: controlTool, Rep: 3, Err: "failed"},
	}}
	var off benchstat.Calibrator
	sr.score(off.Steady, []string{"erdmakit", "ib_write_lat", controlTool})
	assert.InDeltaSlice(t, []float64{12.0 / 12, 1}, sr.RoundsMean, 1e-9, "ours against the geometric mean of both runs; round 3 has no control")
	assert.InDeltaSlice(t, []float64{16.0 / 9, 1}, sr.RoundsControl, 1e-9)
	assert.InDeltaSlice(t, []float64{12.0 / 9, 1, 1.1}, sr.Rounds, 1e-9, "ours against the first run, as without -control")
	assert.InDelta(t, 13, sr.ControlUS, 1e-9)
	assert.InDelta(t, 22, sr.P99US["erdmakit"], 1e-9, "each tool's p99, median over rounds")
	assert.InDelta(t, 26, sr.P99US[controlTool], 1e-9)
}

func TestRoundOrders(t *testing.T) {
	tools := []string{"a", "b", "c"}
	assert.Equal(t, []string{"b", "c", "a"}, rotate(tools, 1))
	first, again := shuffler(7), shuffler(7)
	seen := map[string]bool{}
	for r := range 30 {
		o := first(tools, r)
		assert.ElementsMatch(t, tools, o, "a permutation")
		assert.Equal(t, o, again(tools, r), "the same seed, the same orders")
		seen[o[0]+o[1]+o[2]] = true
	}
	assert.Greater(t, len(seen), 3, "orders vary from round to round")
	assert.Equal(t, []string{"a", "b", "c"}, tools, "the tools' list is not changed")
}

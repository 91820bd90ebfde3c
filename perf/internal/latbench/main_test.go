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

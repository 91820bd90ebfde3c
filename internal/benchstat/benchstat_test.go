package benchstat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuartilesAndFormat(t *testing.T) {
	v := []float64{1.2, 0.9, 1.0, 0.8, 1.1}
	q := Quartiles(v)
	assert.InDelta(t, 1.0, q.Median, 1e-9)
	assert.InDelta(t, 0.9, q.P25, 1e-9)
	assert.InDelta(t, 1.1, q.P75, 1e-9)
	assert.Equal(t, []float64{1.2, 0.9, 1.0, 0.8, 1.1}, v, "the input keeps its order")
	assert.InDelta(t, 0.95, Median([]float64{1.0, 0.9}), 1e-9)
	assert.Zero(t, Median(nil))
	assert.InDelta(t, 0.7, Quantile([]float64{0.7}, 0.75), 1e-9)
	assert.Equal(t, "-", Format(Spread{}, 0))
	assert.Equal(t, "1.000 (0.900-1.100), 5", Format(Spread{Median: 1, P25: 0.9, P75: 1.1}, 5))
	assert.Equal(t, "-", Figure(0, 2))
	assert.Equal(t, "377.92", Figure(377.921, 2))
}

func TestIntList(t *testing.T) {
	got, err := IntList("1, 16")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 16}, got)
	for _, bad := range []string{"", "1,,2", "0", "-4", "x"} {
		_, err := IntList(bad)
		assert.Error(t, err, bad)
	}
}

func TestCalibrateAndSteady(t *testing.T) {
	mbps := Calibrate(20 * time.Millisecond)
	assert.Greater(t, mbps, 1.0, "a 4 MiB copy and checksum at least once")
	assert.True(t, Steady(95, 100, 100, 0.9))
	assert.True(t, Steady(0, 91, 100, 0.9), "a calibration not taken does not count")
	assert.False(t, Steady(100, 60, 100, 0.9), "slow after the run")
	assert.False(t, Steady(70, 100, 100, 0.9), "slow before it")
}

func TestCalibratorKeepsRunsNearTheReference(t *testing.T) {
	c := Calibrator{Frac: 0.9, all: []float64{1000, 1010, 990, 1000, 600}}
	assert.InDelta(t, 1000, c.Ref(), 1e-9)
	assert.True(t, c.Steady(1000, 950))
	assert.False(t, c.Steady(950, 600), "slow after the run")
	assert.Contains(t, c.Summary(), "0.90 of the reference (the upper quartile), 1000 MB/s; 5 calibrations")
	slowStart := Calibrator{Frac: 0.9, all: []float64{600, 610, 590, 600, 600, 1000, 1000, 990, 1010}}
	assert.Greater(t, slowStart.Ref(), 950.0, "the fast speed, though more than half the calibrations are slow")
	assert.False(t, slowStart.Steady(600, 610))
	var off Calibrator
	assert.Zero(t, off.Take())
	assert.True(t, off.Steady(1, 1), "off: every run is steady")
	assert.Empty(t, off.Summary())
	on := Calibrator{Frac: 0.9, D: time.Millisecond}
	on.Start()
	assert.Len(t, on.All(), 8)
	assert.Greater(t, on.Take(), 0.0)
}

func TestByRoundAndSteadyRound(t *testing.T) {
	type run struct{ round, before, after int }
	runs := []run{{2, 100, 100}, {1, 100, 50}, {2, 100, 95}, {1, 90, 100}}
	groups := ByRound(runs, func(r run) int { return r.round })
	assert.Equal(t, [][]run{{{2, 100, 100}, {2, 100, 95}}, {{1, 100, 50}, {1, 90, 100}}}, groups, "rounds in first-seen order")
	cal := func(r run) (float64, float64) { return float64(r.before), float64(r.after) }
	steady := func(before, after float64) bool { return Steady(before, after, 100, 0.9) }
	assert.True(t, SteadyRound(groups[0], cal, steady))
	assert.False(t, SteadyRound(groups[1], cal, steady), "one slow calibration")
	kept, disturbed := JudgeRounds(runs, func(r run) int { return r.round }, cal, steady)
	assert.Equal(t, [][]run{groups[0]}, kept)
	assert.Equal(t, []int{1}, disturbed)
}

func TestUnscored(t *testing.T) {
	assert.Contains(t, Unscored(32, 32), "all 32 rounds left out as disturbed")
	assert.Contains(t, Unscored(32, 30), "no tool figure in any of the 2 kept rounds")
	assert.Contains(t, Unscored(0, 0), "no tool figure")
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuantiles(t *testing.T) {
	v := []float64{1.2, 0.9, 1.0, 0.8, 1.1}
	q := quartiles(v)
	assert.InDelta(t, 1.0, q.Median, 1e-9)
	assert.InDelta(t, 0.9, q.P25, 1e-9)
	assert.InDelta(t, 1.1, q.P75, 1e-9)
	assert.Equal(t, []float64{1.2, 0.9, 1.0, 0.8, 1.1}, v, "the input keeps its order")
	assert.InDelta(t, 0.95, median([]float64{1.0, 0.9}), 1e-9)
	assert.Zero(t, median(nil))
	assert.InDelta(t, 0.7, quantile([]float64{0.7}, 0.75), 1e-9)
}

func TestIntList(t *testing.T) {
	got, err := intList("1, 16")
	assert.NoError(t, err)
	assert.Equal(t, []int{1, 16}, got)
	for _, bad := range []string{"", "1,,2", "0", "-4", "x"} {
		_, err := intList(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "-", fmtSpread(spread{}, 0))
	assert.Equal(t, "1.000 (0.900-1.100), 5", fmtSpread(spread{Median: 1, P25: 0.9, P75: 1.1}, 5))
}

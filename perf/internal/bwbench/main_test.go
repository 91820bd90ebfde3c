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

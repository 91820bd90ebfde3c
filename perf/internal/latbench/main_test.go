package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuartilesAndMedians(t *testing.T) {
	q := quartiles([]float64{1.2, 0.9, 1.0, 0.8, 1.1})
	assert.InDelta(t, 1.0, q.Median, 1e-9)
	assert.InDelta(t, 0.9, q.P25, 1e-9)
	assert.InDelta(t, 1.1, q.P75, 1e-9)
	ss := []sample{{Tool: "erdmakit", MedianUS: 10}, {Tool: "erdmakit", MedianUS: 12}, {Tool: "erdmakit", MedianUS: 99, Err: "x"},
		{Tool: "ib_write_lat", MedianUS: 11}}
	assert.InDelta(t, 11, medianOf(ss, "erdmakit"), 1e-9, "failed runs left out")
	assert.InDelta(t, 11, medianOf(ss, "ib_write_lat"), 1e-9)
	assert.Zero(t, medianOf(ss, "other"))
	assert.Equal(t, "-", fmtSpread(spread{}, 0))
	_, err := intList("2,,4")
	assert.Error(t, err)
}

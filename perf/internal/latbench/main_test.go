package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedianOfLeavesFailedRunsOut(t *testing.T) {
	ss := []sample{{Tool: "erdmakit", MedianUS: 10}, {Tool: "erdmakit", MedianUS: 12}, {Tool: "erdmakit", MedianUS: 99, Err: "x"},
		{Tool: "ib_write_lat", MedianUS: 11}}
	assert.InDelta(t, 11, medianOf(ss, "erdmakit"), 1e-9, "failed runs left out")
	assert.InDelta(t, 11, medianOf(ss, "ib_write_lat"), 1e-9)
	assert.Zero(t, medianOf(ss, "other"))
}

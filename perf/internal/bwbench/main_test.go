package main

import (
	"testing"

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

package perftest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/erdmakit/erdmakit/health"
)

func TestJudge(t *testing.T) {
	ok := func(gbps float64) *Report { return &Report{Results: []Result{{BWAvgGbps: 1}, {BWAvgGbps: gbps}}} }
	runs := []Run{{Device: "erdma_0", Client: ok(90)}, {Device: "erdma_1", Client: ok(95)}}
	s := Judge(runs, 0, false)
	assert.Equal(t, health.OK, s.Status)
	assert.InDelta(t, 185, s.TotalGbps, 1e-9, "the largest size of each pair")
	assert.Equal(t, health.Warn, Judge(runs, 190, false).Status)
	assert.Equal(t, health.Fail, Judge(runs, 0, true).Status, "serve judges the servers, which did not run")
	assert.Equal(t, health.Fail, Judge(append(runs, Run{Device: "erdma_2", Error: "no such device"}), 0, false).Status)
}

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

func TestJudgeLatency(t *testing.T) {
	ok := func(us float64) *Report {
		return &Report{Latency: []LatencyResult{{Bytes: 2, TypicalUS: 1}, {Bytes: 4096, TypicalUS: us}}}
	}
	runs := []Run{{Device: "erdma_0", Client: ok(15.5), Server: ok(15.4)}, {Device: "erdma_1", Client: ok(16.2)}}
	s := JudgeLatency(runs, 0, false)
	assert.Equal(t, health.OK, s.Status)
	assert.InDelta(t, 16.2, s.MedianUS, 1e-9, "the worst pair at its largest size")
	assert.Equal(t, health.OK, JudgeLatency(runs, 16.2, false).Status)
	assert.Equal(t, health.Warn, JudgeLatency(runs, 16, false).Status, "a median above the threshold warns")
	assert.Equal(t, health.Fail, JudgeLatency(runs, 0, true).Status, "erdma_1's server printed nothing")
	assert.Equal(t, health.Fail, JudgeLatency([]Run{{Device: "erdma_0", Client: &Report{Results: []Result{{BWAvgGbps: 1}}}}}, 0, false).Status,
		"a bandwidth table is no latency result")
	assert.Equal(t, health.Fail, JudgeLatency(append(runs, Run{Device: "erdma_2", Error: "no such device"}), 0, false).Status)
}

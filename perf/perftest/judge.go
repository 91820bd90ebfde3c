package perftest

import "github.com/erdmakit/erdmakit/health"

// Summary is a set of ib_write_bw pairs judged together: the public schema
// of `erdmakit perftest --json`.
type Summary struct {
	// Status: ok, warn (total below ExpectGbps), fail (a pair failed).
	Status     health.Severity `json:"status"`
	ExpectGbps float64         `json:"expect_gbps,omitempty"`
	// TotalGbps is the sum of each pair's average at its largest size.
	TotalGbps float64 `json:"total_gbps"`
	Runs      []Run   `json:"runs"`
}

// Judge adds up runs and decides the status. serve judges the servers'
// side (a host that only served), otherwise the clients'.
func Judge(runs []Run, expectGbps float64, serve bool) *Summary {
	s := &Summary{Status: health.OK, ExpectGbps: expectGbps, Runs: runs}
	for _, r := range runs {
		side := r.Client
		if serve {
			side = r.Server
		}
		if r.Error != "" || side == nil || !side.OK() {
			s.Status = health.Fail
			continue
		}
		if n := len(side.Results); n > 0 {
			s.TotalGbps += side.Results[n-1].BWAvgGbps
		}
	}
	if s.Status == health.OK && expectGbps > 0 && s.TotalGbps < expectGbps {
		s.Status = health.Warn
	}
	return s
}

// LatencySummary is a set of ib_write_lat pairs judged together: the public
// schema of `erdmakit perftest lat --json`.
type LatencySummary struct {
	// Status: ok, warn (a median above ExpectUS), fail (a pair failed).
	Status   health.Severity `json:"status"`
	ExpectUS float64         `json:"expect_us,omitempty"`
	// MedianUS is the highest t_typical (ib_write_lat's median) of the
	// pairs at their largest size: the figure judged.
	MedianUS float64 `json:"median_us"`
	Runs     []Run   `json:"runs"`
}

// JudgeLatency decides the status of ib_write_lat pairs: the bandwidth
// rule inverted (lower is better), every pair's median at its largest size
// at most expectUS (0: no threshold). serve judges the servers' side (a
// host that only served: ib_write_lat prints the table on both sides).
func JudgeLatency(runs []Run, expectUS float64, serve bool) *LatencySummary {
	s := &LatencySummary{Status: health.OK, ExpectUS: expectUS, Runs: runs}
	for _, r := range runs {
		side := r.Client
		if serve {
			side = r.Server
		}
		if r.Error != "" || side == nil || !side.OK() || len(side.Latency) == 0 {
			s.Status = health.Fail
			continue
		}
		s.MedianUS = max(s.MedianUS, side.Latency[len(side.Latency)-1].TypicalUS)
	}
	if s.Status == health.OK && expectUS > 0 && s.MedianUS > expectUS {
		s.Status = health.Warn
	}
	return s
}

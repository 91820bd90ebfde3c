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

package report

import (
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/plot"
)

// Package plot takes plain data so that it imports no domain package (a
// laptop charts results without cgo, netlink or NVML); these convert the
// domain's results to it, for the page and for the CLI's --plot files.

// BandwidthOf is a bw sweep's results as plot.Sweep's input.
func BandwidthOf(results []perf.Result) []plot.Bandwidth {
	out := make([]plot.Bandwidth, 0, len(results))
	for _, r := range results {
		out = append(out, plot.Bandwidth{Device: r.Device, Size: r.Size, Gbps: r.AvgGbps})
	}
	return out
}

// perftestSweep is perftest's client rows as plot.Sweep's input.
func perftestSweep(runs []perftest.Run) []plot.Bandwidth {
	var out []plot.Bandwidth
	for _, r := range runs {
		if r.Client == nil {
			continue
		}
		for _, x := range r.Client.Results {
			out = append(out, plot.Bandwidth{Device: r.Device, Size: int(x.Bytes), Gbps: x.BWAvgGbps})
		}
	}
	return out
}

// LatencyOf is `bw lat`'s results as plot.LatencyHistogram's and
// plot.LatencyPercentiles' input (the samples shared, not copied).
func LatencyOf(results []perf.LatencyResult) []plot.Latency {
	out := make([]plot.Latency, 0, len(results))
	for _, r := range results {
		out = append(out, plot.Latency{Device: r.Device, Size: r.Size, Iterations: r.Iterations,
			MinUS: r.MinUS, MedianUS: r.MedianUS, P99US: r.P99US, P999US: r.P999US, MaxUS: r.MaxUS, Samples: r.Samples})
	}
	return out
}

// MeshOf is a bw mesh as plot.Heatmap's input (the matrix shared, not
// copied), coloured against its expectation when it has one, else its
// median; nil is an empty mesh.
func MeshOf(r *fleet.MeshReport) plot.Mesh {
	if r == nil {
		return plot.Mesh{}
	}
	return plot.Mesh{Hosts: r.Hosts, Matrix: r.Matrix, MedianGbps: r.MedianGbps, ExpectGbps: r.ExpectGbps, Tested: untestedPairs(r)}
}

// untestedPairs is r.Tested() when some pair of distinct hosts was not
// tested, else nil. Only a screen or an interrupted mesh leaves pairs
// untested: a full mesh that ran to its end tested every pair, so a null
// there is a failure whatever the results list says.
func untestedPairs(r *fleet.MeshReport) [][]bool {
	if (r.Schedule != fleet.ScheduleScreen && !r.Interrupted) || len(r.Results) == 0 {
		return nil
	}
	t := r.Tested()
	for i, row := range t {
		for j, ok := range row {
			if i != j && !ok {
				return t
			}
		}
	}
	return nil
}

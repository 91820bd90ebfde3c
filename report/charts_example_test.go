package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/plot"
	"github.com/erdmakit/erdmakit/report"
)

// A bw sweep's results drawn by package plot, which takes plain data.
func ExampleBandwidthOf() {
	results := []perf.Result{{Device: "erdma_0", Size: 65536, AvgGbps: 88}, {Device: "erdma_0", Size: 1 << 20, AvgGbps: 97}}
	var svg bytes.Buffer
	fmt.Println(plot.Sweep(&svg, "bw sweep", report.BandwidthOf(results)), strings.Contains(svg.String(), "erdma_0"))
	// Output: <nil> true
}

// `bw lat`'s results as a histogram of their samples.
func ExampleLatencyOf() {
	samples := []time.Duration{15 * time.Microsecond, 16 * time.Microsecond, 15 * time.Microsecond}
	results := []perf.LatencyResult{{Device: "erdma_0", Size: 2, LatencyStats: perf.NewLatencyStats(samples), Samples: samples}}
	var svg bytes.Buffer
	fmt.Println(plot.LatencyHistogram(&svg, "bw lat", report.LatencyOf(results)), strings.Contains(svg.String(), "erdma_0 2B"))
	// Output: <nil> true
}

// A bw mesh as a heat map.
func ExampleMeshOf() {
	gbps := 97.0
	rep := &fleet.MeshReport{Hosts: []string{"gpu0", "gpu1"}, MedianGbps: gbps, Matrix: [][]*float64{{nil, &gbps}, {&gbps, nil}}}
	var svg bytes.Buffer
	fmt.Println(plot.Heatmap(&svg, report.MeshOf(rep)), strings.Contains(svg.String(), "gpu1"))
	fmt.Println(plot.Heatmap(&svg, report.MeshOf(nil)))
	// Output:
	// <nil> true
	// plot: nothing to plot: a heat map needs at least 2 hosts
}

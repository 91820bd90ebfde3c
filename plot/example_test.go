package plot_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"time"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/plot"
)

// An nccl-tests result drawn against the bandwidth the job should reach.
func ExampleBusBW() {
	res, err := ncclog.ParseTests(context.Background(), strings.NewReader(`#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    55.1   19.03   35.68      0    54.9   19.10   35.81      0
    16777216       4194304     float     sum      -1   201.3   83.34  156.27      0   200.8   83.55  156.66      0
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var svg bytes.Buffer
	if err := plot.BusBW(&svg, res, "all_reduce_perf", 150); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(svg.String(), "expected 150.0 GB/s"))
	// Output: true
}

// A bw sweep: one line per device and their total. Package report's
// BandwidthOf converts perf's and perftest's results.
func ExampleSweep() {
	results := []plot.Bandwidth{
		{Device: "erdma_0", Size: 65536, Gbps: 88},
		{Device: "erdma_0", Size: 1 << 20, Gbps: 97},
	}
	var svg bytes.Buffer
	fmt.Println(plot.Sweep(&svg, "bw sweep", results), svg.Len() > 0)
	fmt.Println(plot.Sweep(&svg, "nothing", nil))
	// Output:
	// <nil> true
	// plot: nothing to plot
}

// One-way latency samples, drawn as a histogram. Package report's
// LatencyOf converts `bw lat`'s results.
func ExampleLatencyHistogram() {
	r := plot.Latency{Device: "erdma_0", Size: 2, Iterations: 4, MinUS: 14.9, MedianUS: 15.05, P99US: 15.4, P999US: 15.4, MaxUS: 15.4,
		Samples: []time.Duration{14900 * time.Nanosecond, 15 * time.Microsecond, 15100 * time.Nanosecond, 15400 * time.Nanosecond}}
	var svg bytes.Buffer
	fmt.Println(plot.LatencyHistogram(&svg, "bw lat", []plot.Latency{r}), svg.Len() > 0)
	// Output:
	// <nil> true
}

// What NCCL used, from an NCCL_DEBUG=INFO log: channels per transport and
// per NET/IB device, and how many went over GPUDirect RDMA.
func ExampleNCCLUse() {
	s, err := ncclog.Analyze(context.Background(), strings.NewReader(`host:1:1 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [1]erdma_1:1/RoCE ; OOB eth0:10.0.0.1<0>
host:1:1 [0] NCCL INFO Using network IB
host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
host:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1/GDRDMA
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var svg bytes.Buffer
	fmt.Println(plot.NCCLUse(&svg, "NCCL", s), strings.Contains(svg.String(), "erdma_1"))
	// Output: <nil> true
}

// `bw lat` read back from its JSON has no samples: the percentiles instead
// of the histogram.
func ExampleLatencyPercentiles() {
	r := plot.Latency{Device: "erdma_0", Size: 2, Iterations: 1000, MinUS: 14.1, MedianUS: 15.2, P99US: 17.9, P999US: 24.0, MaxUS: 61.3}
	var svg bytes.Buffer
	fmt.Println(plot.LatencyPercentiles(&svg, "bw lat", []plot.Latency{r}), svg.Len() > 0)
	// Output: <nil> true
}

// A mesh of three hosts where gpu2 is slow: its cells are red, the pair
// as expected blue, against the expected 100 Gbit/s. Package report's
// MeshOf converts fleet's mesh report.
func ExampleHeatmap() {
	fast, slow := 98.0, 31.0
	m := plot.Mesh{Hosts: []string{"gpu0", "gpu1", "gpu2"}, MedianGbps: 31, ExpectGbps: 100, Matrix: [][]*float64{
		{nil, &fast, &slow},
		{&fast, nil, &slow},
		{&slow, &slow, nil},
	}}
	var svg bytes.Buffer
	fmt.Println(plot.Heatmap(&svg, m), strings.Contains(svg.String(), "≥ 90.0 as expected"))
	// Output: <nil> true
}

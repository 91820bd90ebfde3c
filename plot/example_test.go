package plot_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/perf"
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

// A bw sweep: one line per device and their total.
func ExampleSweep() {
	results := []perf.Result{
		{Device: "erdma_0", Size: 65536, AvgGbps: 88},
		{Device: "erdma_0", Size: 1 << 20, AvgGbps: 97},
	}
	var svg bytes.Buffer
	fmt.Println(plot.Sweep(&svg, "bw sweep", results), svg.Len() > 0)
	fmt.Println(plot.Sweep(&svg, "nothing", nil))
	// Output:
	// <nil> true
	// plot: nothing to plot
}

func ExampleLatencyHistogram() {
	link := perf.NewEmulatedLink("fake0", 10, 0)
	results, _ := perf.LatencyLoopback(context.Background(), []perf.Link{link}, perf.LatencyConfig{Iterations: 100}, nil)
	var svg bytes.Buffer
	fmt.Println(plot.LatencyHistogram(&svg, "bw lat", results), svg.Len() > 0)
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
	r := perf.LatencyResult{Device: "erdma_0", Size: 2,
		LatencyStats: perf.LatencyStats{Iterations: 1000, MinUS: 14.1, MedianUS: 15.2, P99US: 17.9, P999US: 24.0, MaxUS: 61.3}}
	var svg bytes.Buffer
	fmt.Println(plot.LatencyPercentiles(&svg, "bw lat", []perf.LatencyResult{r}), svg.Len() > 0)
	// Output: <nil> true
}

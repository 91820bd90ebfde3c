package perf_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/erdmakit/erdmakit/perf"
)

// Loopback runs a server and a client per device on this host. The fake
// link stands in for an RDMA device: a 1 Gbit/s emulated wire.
func ExampleLoopback() {
	link := perf.NewEmulatedLink("fake0", 1, 0)
	cfg := perf.Config{Size: 65536, QPs: 2, Iterations: 100}
	results, errs := perf.Loopback(context.Background(), []perf.Link{link}, cfg, nil)
	r := results[0]
	fmt.Println(len(errs), r.Device, r.Method, r.Messages, r.Bytes)
	fmt.Println(r.TX.Counter, r.TX.Delta == r.TotalBytes, r.TX.OK)
	rep := perf.NewReport(results, errs, 100)
	fmt.Println(rep.Status, "below", rep.ExpectGbps, "Gbit/s")
	// Output:
	// 0 fake0 oob 200 13107200
	// tx_bytes_cnt true true
	// warn below 100 Gbit/s
}

// A server serves tests until its context ends; a client runs a sweep
// against it over one out-of-band connection.
func ExampleClient() {
	ctx, cancel := context.WithCancel(context.Background())
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &perf.Server{Links: []perf.Link{perf.NewEmulatedLink("fake_srv", 2, 0)}}
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()

	c := &perf.Client{Link: perf.NewEmulatedLink("fake_cli", 2, 0), Addr: ln.Addr().String(),
		Config: perf.Config{QPs: 4, Iterations: 50}}
	results, err := c.Run(ctx, []int{4096, 65536})
	for _, r := range results {
		fmt.Println(r.Device, "->", r.ServerDevice, r.Size, r.Messages)
	}
	fmt.Println(err)
	cancel()
	fmt.Println(<-done)
	// Output:
	// fake_cli -> fake_srv 4096 200
	// fake_cli -> fake_srv 65536 200
	// <nil>
	// <nil>
}

// A program that runs write loops raises GOMAXPROCS once at start, so that
// on a one-CPU host the Go runtime does not take the loop's P back during
// each long post call (software RDMA does the device's work inside it).
func ExampleRaiseMaxProcs() {
	perf.RaiseMaxProcs()
	fmt.Println(runtime.GOMAXPROCS(0) >= perf.MinProcs)
	// Output: true
}

// LatencyLoopback plays ib_write_lat's ping-pong from each device to
// itself and reports one-way latencies (round trip / 2). The emulated link
// adds 50 µs to every write.
func ExampleLatencyLoopback() {
	link := perf.NewEmulatedLink("fake0", 10, 50*time.Microsecond)
	cfg := perf.LatencyConfig{Size: 2, Iterations: 200}
	results, errs := perf.LatencyLoopback(context.Background(), []perf.Link{link}, cfg, nil)
	r := results[0]
	fmt.Println(len(errs), r.Device, r.Method, r.Size, r.Iterations, len(r.Samples), r.MinUS >= 50)
	rep := perf.NewLatencyReport(results, errs, 1) // a median above 1 µs warns
	fmt.Println(rep.Status)
	// Output:
	// 0 fake0 oob 2 200 200 true
	// warn
}

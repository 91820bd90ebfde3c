// Command labrecord runs inside the lab guest (labrun -record starts it) and
// copies the guest's RDMA host tree into a recorded-host directory (see
// lab.Record).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/erdmakit/erdmakit/internal/lab"
)

func main() {
	out := flag.String("out", "", "directory to write the recorded host into (must not exist)")
	dev := flag.String("device", lab.Device, "RDMA device")
	netdev := flag.String("netdev", lab.Netdev, "its netdev")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "labrecord: -out is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lab.Record(ctx, "/", *out, lab.RecordOptions{Device: *dev, Netdev: *netdev}); err != nil {
		fmt.Fprintln(os.Stderr, "labrecord:", err)
		os.Exit(1)
	}
}

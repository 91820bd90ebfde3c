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
	out := flag.String("out", "", "tar file to write the recorded host into")
	dev := flag.String("device", lab.Device, "RDMA device")
	netdev := flag.String("netdev", lab.Netdev, "its netdev")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "labrecord: -out is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := record(ctx, *out, *dev, *netdev); err != nil {
		fmt.Fprintln(os.Stderr, "labrecord:", err)
		os.Exit(1)
	}
}

// record writes the tree to a tmpfs directory first, then one tar to out.
func record(ctx context.Context, out, dev, netdev string) error {
	tmp, err := os.MkdirTemp("", "labrecord-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := lab.Record(ctx, "/", tmp, lab.RecordOptions{Device: dev, Netdev: netdev}); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := lab.WriteTreeTar(f, tmp); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package nccl_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

func ExampleDiagnose() {
	res, _ := ncclog.ParseTests(context.Background(), strings.NewReader(`NCCL INFO NET/IB : No device found.
NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
NCCL INFO Using network Socket
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     4194304       1048576     float     sum      -1    364.6   11.50   21.57      0    356.6   11.76   22.05      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 21.81
`))
	for _, f := range nccl.Diagnose(res, nccl.Expectation{BusBWGBs: 25}) {
		fmt.Println(f.Severity, f.ID)
	}
	// Output:
	// fail nccl-socket-fallback
	// warn nccl-busbw
}

func ExampleRun() {
	c := nccl.DefaultCommand()
	c.Hosts, _ = nccl.ParseHosts("gpu-a:8,gpu-b:8")
	c.TestArgs = []string{"-b", "8", "-e", "8G", "-f", "2", "-g", "1"}
	run, err := nccl.Run(context.Background(), c, nccl.RunOptions{
		OnRow: func(r nccl.Row) { fmt.Printf("%d bytes: %.2f GB/s\n", r.Size, r.OutOfPlace.BusBWGB) }, // report.NCCLLiveRow prints it as the CLI does
	})
	if err != nil {
		fmt.Println(err) // mpirun missing, or the run was cancelled
		return
	}
	rep := nccl.NewRunReport(run, nccl.Expectation{BusBWGBs: 20})
	fmt.Println(rep.Status)
}

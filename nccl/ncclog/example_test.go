package ncclog_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

func ExampleParseTests() {
	log := `# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid  1001 on host1 device  0 [0000:04:00] NVIDIA H20
#  Rank  1 Group  0 Pid  2002 on host2 device  0 [0000:04:00] NVIDIA H20
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
     4194304       1048576     float     sum      -1    80.10   52.36   52.36       0    79.90   52.49   52.49       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 52.425
`
	r, err := ncclog.ParseTests(context.Background(), strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	row := r.Rows[0]
	fmt.Printf("%s: %d ranks on %d hosts, %d B busbw %.2f GB/s, wrong=%v, ok=%v\n",
		r.Collective, r.Ranks, r.Hosts, row.Size, row.OutOfPlace.BusBWGB, row.OutOfPlace.Wrong, r.OK)
	// Output: all_reduce_perf: 2 ranks on 2 hosts, 4194304 B busbw 52.36 GB/s, wrong=0, ok=true
}

func ExampleTestParser() {
	p := ncclog.NewTestParser()
	p.OnRow = func(r ncclog.Row) { fmt.Printf("row: %d B %.2f GB/s\n", r.Size, r.OutOfPlace.BusBWGB) }
	p.Feed("     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0    79.90   52.49   98.43      0")
	p.Feed("# Out of bounds values : 0 OK")
	fmt.Println("ok:", p.Result().OK)
	// Output:
	// row: 4194304 B 98.18 GB/s
	// ok: true
}

func ExampleAnalyze() {
	log := `host1:523:564 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
host1:523:564 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [1]erdma_1:1/RoCE [RO]; OOB eth0:10.0.5.76<0>
host1:523:564 [0] NCCL INFO Using network IB
host1:523:564 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'erdma_0'
host1:523:564 [0] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [receive] via NET/IB/0
`
	s, err := ncclog.Analyze(context.Background(), strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.NCCLVersion, s.Network, s.IBDevices[1].Name, s.GDR.Disabled, s.Channels["NET/IB"], s.GDRDMAChannels)
	// Output: 2.21.5 IB erdma_1 [erdma_0] 1 0
}

func ExampleClassifyLaunch() {
	log := `--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[56171,1],6]
  Exit code:    3
--------------------------------------------------------------------------`
	failures, _ := ncclog.ClassifyLaunch(context.Background(), strings.NewReader(log))
	for _, f := range failures {
		fmt.Println(f.Kind, "|", f.Summary)
	}
	// Output:
	// rank-exited | rank 6 exited with code 3
}

// What a log alone says, as findings: here NCCL fell back to TCP sockets.
func ExampleDiagnose() {
	s, err := ncclog.Analyze(context.Background(), strings.NewReader(`host1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
host1:1:1 [0] NCCL INFO NET/IB : No device found.
host1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
host1:1:1 [0] NCCL INFO Using network Socket
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Transport)
	for _, f := range ncclog.Diagnose(s) {
		fmt.Println(f.Severity, f.ID)
	}
	// Output:
	// socket
	// fail nccl-socket-fallback
}

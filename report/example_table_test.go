package report_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/report"
)

// A doctor's report (doctor.Run's) as `erdmakit doctor` prints it. The
// caller decides colour: the CLI sets Color on a terminal.
func ExampleWriteDoctorTable() {
	rep := &erdma.Report{Status: health.Fail, Host: &erdma.Inventory{Root: "/"}, Findings: []health.Finding{
		{ID: "memlock", Severity: health.Fail, Summary: "memlock 64 KiB: every ibv_create_qp fails with ENOMEM",
			Evidence: []string{"RLIMIT_MEMLOCK soft 64 KiB, hard 64 KiB (getrlimit)"}, Remediation: "ulimit -l unlimited"},
		{ID: "rate-limit-drops", Severity: health.OK, Summary: "no rate-limit drops"},
	}}
	_ = report.WriteDoctorTable(os.Stdout, rep, report.TableOptions{})
	// Output:
	// erdmakit doctor: host /, instance type unknown
	//
	// RESULT  CHECK             SUMMARY
	// fail    memlock           memlock 64 KiB: every ibv_create_qp fails with ENOMEM
	// ok      rate-limit-drops  no rate-limit drops
	//
	// fail memlock: memlock 64 KiB: every ibv_create_qp fails with ENOMEM
	//     read: RLIMIT_MEMLOCK soft 64 KiB, hard 64 KiB (getrlimit)
	//     fix:  ulimit -l unlimited
	//
	// status: fail (1 ok, 0 warn, 1 fail, 0 skip)
	// first step: memlock: ulimit -l unlimited
}

// Findings as `erdmakit doctor` and `erdmakit nccl run` print them: the
// table, then the evidence and fix of each problem (of every finding with
// Verbose), and a hint of the caller's own.
func ExampleWriteFindingsTable() {
	fs := []health.Finding{
		{ID: "port-active", Severity: health.OK, Summary: "every eRDMA port is ACTIVE"},
		{ID: "memlock", Severity: health.Fail, Summary: "memlock 64 KiB", Evidence: []string{"RLIMIT_MEMLOCK soft 64 KiB"},
			Remediation: "ulimit -l unlimited"},
	}
	_ = report.WriteFindingsTable(os.Stdout, fs, report.TableOptions{
		Hint: func(f health.Finding) string {
			if f.ID == "memlock" {
				return "under systemd: LimitMEMLOCK=infinity"
			}
			return ""
		},
	})
	// Output:
	// RESULT  CHECK        SUMMARY
	// ok      port-active  every eRDMA port is ACTIVE
	// fail    memlock      memlock 64 KiB
	//
	// fail memlock: memlock 64 KiB
	//     read: RLIMIT_MEMLOCK soft 64 KiB
	//     fix:  ulimit -l unlimited
	//     hint: under systemd: LimitMEMLOCK=infinity
}

// A bandwidth report as `erdmakit bw` prints it.
func ExampleWriteBandwidthTable() {
	r := perf.Result{Device: "erdma_0", ServerDevice: "erdma_0", Method: connect.OOB, QPs: 16, Size: 65536,
		Messages: 1000000, Bytes: 65536000000, DurationS: 5, AvgGbps: 104.8576, PeakGbps: 105, Mpps: 0.2,
		TX: &perf.CounterProof{Counter: "tx_bytes_cnt", Unit: "bytes", Delta: 70000000000, Want: 69000000000, OK: true}}
	rep := perf.NewReport([]perf.Result{r}, nil, 100)
	_ = report.WriteBandwidthTable(os.Stdout, rep, report.TableOptions{})
	// Output:
	// DEVICE   SERVER   QPS  SIZE   MESSAGES  SECONDS  AVG_GBPS  PEAK_GBPS  MPPS    COUNTER_PROOF
	// erdma_0  erdma_0  16   64KiB  1000000   5.000    104.858   105.000    0.2000  tx_bytes_cnt +70000000000 bytes (>= 69000000000) ok
	// status: ok (expected at least 100.0 Gbit/s in total)
}

// What `erdmakit fleet doctor` prints: hosts by rank, the count per
// status, the checks that differ.
func ExampleWriteFleetTable() {
	ok := health.Finding{ID: "gdr-peermem", Severity: health.OK, Summary: "nvidia_peermem loaded"}
	bad := health.Finding{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded"}
	mtu := health.Finding{ID: "mtu", Severity: health.Warn, Summary: "MTU 1500"}
	rep := fleet.Aggregate(3, []fleet.HostReport{
		{Rank: 0, Host: "gpu1", Report: &erdma.Report{Status: health.Warn, Findings: []health.Finding{ok, mtu}}},
		{Rank: 1, Host: "gpu2", Report: &erdma.Report{Status: health.Fail, Findings: []health.Finding{bad, mtu}}},
	}, []int{2})
	_ = report.WriteFleetTable(os.Stdout, rep, report.TableOptions{})
	// Output:
	// RANK  HOST    STATUS   PROBLEMS
	// 0     gpu1    warn     mtu
	// 1     gpu2    fail     gdr-peermem,mtu
	// 2     rank 2  missing  did not report in time
	//
	// 3 hosts: 1 warn 1 fail 1 missing
	//
	// Checks that differ between hosts (the rarest result first):
	// CHECK        SEVERITY  HOSTS  SUMMARY
	// gdr-peermem  fail      gpu2   nvidia_peermem is not loaded
	// gdr-peermem  ok        gpu1   nvidia_peermem loaded
}

// Colour is a field the caller sets: the severity words come wrapped in
// ANSI codes (here shown quoted).
func ExampleTableOptions() {
	var b strings.Builder
	rep := &perf.LatencyReport{Status: health.Warn, ExpectUS: 5}
	_ = report.WriteLatencyTable(&b, rep, report.TableOptions{Color: true})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	fmt.Printf("%q\n", lines[len(lines)-1])
	// Output:
	// "status: \x1b[33mwarn\x1b[0m (expected a median of at most 5.00 us)"
}

// An nccl run's rows one at a time, as nccl.RunOptions.OnRow delivers
// them (`erdmakit nccl run` on a terminal).
func ExampleNCCLLiveRow() {
	row := ncclog.Row{Size: 8 << 30, Count: 2 << 30, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: ncclog.Measurement{TimeUS: 50712, AlgBWGB: 169.4, BusBWGB: 317.6, Wrong: ncclog.KnownCount(0)}}
	fmt.Println("running: mpirun ... all_reduce_perf -b 8 -e 8G")
	fmt.Println(report.NCCLLiveHeader)
	fmt.Println(report.NCCLLiveRow(row))
	// Output:
	// running: mpirun ... all_reduce_perf -b 8 -e 8G
	//         SIZE   TIME(us)    ALGBW    BUSBW  #WRONG   (out-of-place; GB/s)
	//           8G    50712.0   169.40   317.60       0
}

// What `erdmakit nccl run` prints after the run: the rows, the average
// bus bandwidth, the diagnosis and the status.
func ExampleWriteNCCLRunTable() {
	res, err := ncclog.ParseTests(context.Background(), strings.NewReader(`#  Rank  0 Group  0 Pid   1234 on     gpu-a device  0 [0x0e] NVIDIA H20
NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [1]erdma_1:1/RoCE ; OOB eth0:10.0.0.1<0>
NCCL INFO Using network IB
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  8589934592    2147483648     float     sum      -1    50712  169.39  317.60      0    50801  169.09  317.04      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 317.32
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := nccl.NewRunReport(&nccl.RunResult{Argv: []string{"mpirun", "all_reduce_perf"}, Result: res}, nccl.Expectation{BusBWGBs: 300})
	_ = report.WriteNCCLRunTable(os.Stdout, rep, report.TableOptions{})
	// Output:
	// SIZE  COUNT       TYPE   REDOP  ROOT  TIME(us)  ALGBW   BUSBW   #WRONG  IP TIME(us)  IP ALGBW  IP BUSBW  IP #WRONG
	// 8G    2147483648  float  sum          50712     169.39  317.60  0       50801        169.09    317.04    0
	// avg bus bandwidth 317.320 GB/s
	//
	// RESULT  CHECK         SUMMARY
	// ok      nccl-network  NCCL used RDMA (NET/IB) on erdma_0:1/RoCE, erdma_1:1/RoCE
	// skip    nccl-gdr      the log does not say whether GPUDirect RDMA was used (no GDR or GDRDMA lines; NCCL_DEBUG=INFO needed)
	// ok      nccl-busbw    bus bandwidth 317.60 GB/s at 8 GiB meets the expected 300.00 GB/s
	// status: ok
}

// A mesh as `erdmakit bw mesh` prints it: the pairwise matrix and the
// culprits.
func ExampleWriteMeshTable() {
	gbps := func(v float64) *float64 { return &v }
	rep := &fleet.MeshReport{Hosts: []string{"gpu1", "gpu2", "gpu3"}, Rounds: 3, MedianGbps: 180, ExpectGbps: 180,
		Results: make([]fleet.PairResult, 3),
		Matrix:  [][]*float64{{nil, gbps(181), gbps(180)}, {gbps(181), nil, nil}, {gbps(180), nil, nil}},
		BadLinks: []fleet.Culprit{{Hosts: []string{"gpu2", "gpu3"}, Reason: "the pair failed twice; each host is fine with others",
			Evidence: []string{"mesh: connect: timeout"}}}}
	_ = report.WriteMeshTable(os.Stdout, rep, report.TableOptions{})
	// Output:
	// 3 hosts, 3 rounds, 3 pair tests; median 180.00 Gbit/s, expected 180.00
	//
	// GBPS  gpu1   gpu2   gpu3
	// gpu1  -      181.0  180.0
	// gpu2  181.0  -      fail
	// gpu3  180.0  fail   -
	//
	// VERDICT   HOSTS          REASON                                                EVIDENCE
	// bad link  gpu2 <-> gpu3  the pair failed twice; each host is fine with others  mesh: connect: timeout
}

// An ib_write_bw summary as `erdmakit perftest` prints it; Serve shows
// the servers' side, as `erdmakit perftest --serve` does on the host that
// only served.
func ExampleWritePerftestTable() {
	side := &perftest.Report{Results: []perftest.Result{{Bytes: 65536, Iterations: 5000, BWPeakGbps: 98.1, BWAvgGbps: 97.6, MsgRateMpps: 0.1862}}}
	runs := []perftest.Run{{Device: "erdma_0", Port: 18515, Client: side, Server: side, Attempts: 1},
		{Device: "erdma_1", Port: 18516, Attempts: 3, Error: "ib_write_bw: exit status 1"}}
	_ = report.WritePerftestTable(os.Stdout, perftest.Judge(runs, 0, true), report.TableOptions{Serve: true})
	// Output:
	// DEVICE   PORT   SIZE   ITERATIONS  AVG_GBPS  PEAK_GBPS  MPPS    ATTEMPTS
	// erdma_0  18515  64KiB  5000        97.600    98.100     0.1862  1
	// erdma_1  18516  -      -           -         -          -       3
	// status: fail (total 97.600 Gbit/s)
}

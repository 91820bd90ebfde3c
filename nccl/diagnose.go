package nccl

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ncclver"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// Expectation is the bus bandwidth a run should reach at its largest size.
type Expectation struct {
	// BusBWGBs is the expected bus bandwidth in GB/s (10^9 bytes/s);
	// 0 derives it from Profile, if any.
	BusBWGBs float64
	// Profile is the hosts' instance profile.
	Profile *erdma.Profile
	// NoNVLink is true when the hosts' GPUs have no NVLink between them
	// (NVML, or nvidia-smi nvlink -s empty): intra-node all_reduce then
	// goes over PCIe, which caps what a second NIC adds.
	NoNVLink bool
	// HostPeerMem is the peer-memory module the hosts had loaded
	// (HostPeerMem), "none", or "" when not known: it decides whether the
	// log's DMA-BUF lines mean GDR ran through DMA-BUF (ncclog.Summary).
	HostPeerMem string
}

// profileBusBWShare is the share of the profile's aggregate RDMA write
// bandwidth (in GB/s) an all_reduce across hosts must reach at a large size
// before it is called low. The measured eRDMA figures (2 hosts, one NIC,
// no GDR: busbw 14.7 GB/s for ib_write_bw ~118 Gbit/s = 14.75 GB/s; with
// GDR 26.6 GB/s) sit at 100-180% of one NIC's rate, so half of the
// aggregate is a floor a healthy run clears, not a target (inference).
const profileBusBWShare = 0.5

// minProfileSize is the smallest message size the profile rule judges:
// below it all_reduce is latency-bound.
const minProfileSize = 64 << 20

// expected returns the expectation in GB/s for a run over hosts, its
// source, and false when there is none.
func (e Expectation) expected(size int64, hosts int) (float64, string, bool) {
	if e.BusBWGBs > 0 {
		return e.BusBWGBs, "the expectation given", true
	}
	p := e.Profile
	if p == nil || p.WriteGbps <= 0 || hosts == 1 || size < minProfileSize {
		return 0, "", false
	}
	v := p.WriteGbps / 8 * profileBusBWShare
	return v, fmt.Sprintf("half the %s profile's RDMA write rate (%.0f Gbit/s = %.1f GB/s; source: %s)",
		p.Family, p.WriteGbps, p.WriteGbps/8, p.Source), true
}

// Diagnose turns a run's results into findings: whether NCCL really used
// eRDMA (NET/IB) or fell back to sockets and why, whether GPUDirect RDMA was
// on, data corruption (#wrong), memlock failures, crashing NCCL versions,
// failures the test printed, and bus bandwidth against the expectation at
// the largest size. It is a pure function; run may be nil (nothing ran).
func Diagnose(res *TestResult, exp Expectation) []health.Finding {
	var fs []health.Finding
	if res == nil {
		return []health.Finding{{ID: "nccl-no-output", Severity: health.Fail,
			Summary:     "no nccl-tests output to judge",
			Evidence:    []string{},
			Remediation: "check that the binary is an nccl-tests program (all_reduce_perf) and that the launcher started it"}}
	}
	if len(res.Failures) > 0 {
		fs = append(fs, health.Finding{ID: "nccl-test-failure", Severity: health.Fail,
			Summary:     "nccl-tests reported a failure",
			Evidence:    firstN(res.Failures, 6),
			Remediation: "read the NCCL WARN lines before the failure (rerun with NCCL_DEBUG=INFO); run erdmakit doctor on the hosts named"})
	}
	if f, ok := blackwellFinding(res); ok {
		fs = append(fs, f)
	}
	if f, ok := gidAutoFinding(res); ok {
		fs = append(fs, f)
	}
	if res.NCCL != nil {
		l := res.NCCL
		if exp.HostPeerMem != "" && l.HostPeerMem == "" {
			c := *l
			c.HostPeerMem = exp.HostPeerMem
			l = &c
		}
		fs = append(fs, ncclog.Diagnose(l)...)
	}
	fs = append(fs, diagnoseRows(res)...)
	fs = append(fs, diagnoseBusBW(res, exp)...)
	if !res.OK && Worst(fs) != health.Fail {
		// What the parser holds against the run that no finding above
		// says: no footer (it did not finish), a FAILED footer with no
		// count, #wrong in rows past the ones kept, a launcher failure
		// after a whole table.
		fs = append(fs, health.Finding{ID: "nccl-incomplete", Severity: health.Fail,
			Summary:     "the nccl-tests output is not a finished, clean run",
			Evidence:    firstN(res.Reasons, 6),
			Remediation: "rerun to the end (no timeout or cancel) and read the output around the last row (--log FILE keeps it)"})
	}
	return fs
}

// DiagnoseRun is Diagnose plus the run's launcher failures.
func DiagnoseRun(run *RunResult, exp Expectation) []health.Finding {
	if run == nil {
		return Diagnose(nil, exp)
	}
	var fs []health.Finding
	for _, f := range run.Failures {
		fs = append(fs, f.Finding())
	}
	if len(fs) > 0 && (run.Result == nil || len(run.Result.Rows) == 0) {
		// The launch failed: the missing table says nothing more, but a
		// graph file that names GPUs the ranks lack is why init failed.
		if run.Result != nil && run.Result.NCCL != nil {
			if f, ok := ncclog.GraphFileFinding(withPassedEnv(run.Result, run.Env).NCCL); ok {
				fs = append(fs, f)
			}
		}
		return fs
	}
	fs = append(fs, Diagnose(withPassedEnv(run.Result, run.Env), exp)...)
	if f, ok := graphOrderFinding(run); ok {
		fs = append(fs, f)
	}
	return fs
}

// graphOrderFinding: the run passed a graph file written for one net dev
// order and the NCCL that ran (its log's version) numbers the devices the
// other way (PCIOrder): channel i then goes out on another NIC than the
// graph meant.
func graphOrderFinding(run *RunResult) (health.Finding, bool) {
	if run.GraphOrder == "" || run.Result == nil || run.Result.NCCL == nil || run.Result.NCCL.NCCLVersion == "" {
		return health.Finding{}, false
	}
	v := run.Result.NCCL.NCCLVersion
	if OrderOf(v) == run.GraphOrder {
		return health.Finding{}, false
	}
	return health.Finding{ID: "nccl-graph-order", Severity: health.Warn,
		Summary: fmt.Sprintf("the graph file's net dev ids follow the %s order, but NCCL %s numbers its IB devices in %s",
			map[string]string{OrderPCI: "PCI bus id", OrderList: "libibverbs' device list"}[run.GraphOrder], v, NetDevOrderName(v)),
		Evidence: []string{"NCCL version " + v, "graph written for order " + run.GraphOrder},
		Remediation: "rewrite the graph for the NCCL that runs: erdmakit nccl env --nccl-version " + v +
			" --graph-file PATH, and copy it to every host (or make both orders agree: NCCL_IB_DEVICE_PCI_ORDER=0 on NCCL >= " + PCIOrderMinNCCL + " keeps libibverbs' order)"}, true
}

// withPassedEnv returns res with the variables the run gave every rank
// added to what the log reported (NCCL prints them only with the ENV
// subsystem), so the diagnosis knows what was passed; res is not changed.
func withPassedEnv(res *TestResult, env []Var) *TestResult {
	if res == nil || res.NCCL == nil || len(env) == 0 {
		return res
	}
	r := *res
	l := *res.NCCL
	l.Env = make(map[string]string, len(res.NCCL.Env)+len(env))
	for k, v := range res.NCCL.Env {
		l.Env[k] = v
	}
	for _, v := range env {
		if _, ok := l.Env[v.Name]; !ok {
			l.Env[v.Name] = v.Value
		}
	}
	r.NCCL = &l
	return &r
}

// Worst returns the status of fs (ok when fs is empty): health.Status,
// the one rule every erdmakit report uses.
func Worst(fs []health.Finding) health.Severity { return health.Status(fs) }

// BlackwellMinNCCL is the first NCCL release for Blackwell GPUs (sm_100,
// sm_120): older ones fail even on one GPU with "Cuda failure 'invalid
// argument'" (erdma-controller runbook: NCCL 2.21.5 + CUDA 12.2 on RTX PRO).
const BlackwellMinNCCL = "2.27"

// blackwellGPU reports whether an nccl-tests device name is a Blackwell GPU.
func blackwellGPU(name string) bool {
	for _, k := range []string{"Blackwell", "B100", "B200", "B300", "GB200", "GB300", "RTX 50"} {
		if strings.Contains(name, k) {
			return true
		}
	}
	return false
}

// blackwellFinding: NCCL older than 2.27 on Blackwell GPUs, or the error it
// gives there ("Cuda failure 'invalid argument'") with an old NCCL.
func blackwellFinding(res *TestResult) (health.Finding, bool) {
	version := ""
	var warnings []string
	if res.NCCL != nil {
		version, warnings = res.NCCL.NCCLVersion, res.NCCL.Warnings
	}
	var gpuEv, errEv string
	for _, d := range res.Devices {
		if blackwellGPU(d.GPU) {
			gpuEv = fmt.Sprintf("rank %d on %s: %s", d.Rank, d.Host, d.GPU)
			break
		}
	}
	for _, w := range append(append([]string(nil), res.Failures...), warnings...) {
		if strings.Contains(strings.ToLower(w), "cuda failure") && strings.Contains(w, "invalid argument") {
			errEv = w
			break
		}
	}
	blackwell, invalid := gpuEv != "", errEv != ""
	old := version != "" && ncclver.Less(version, BlackwellMinNCCL)
	if !(old && (blackwell || invalid)) && !(version == "" && blackwell && invalid) {
		return health.Finding{}, false
	}
	var ev []string
	for _, e := range []string{gpuEv, errEv} {
		if e != "" {
			ev = append(ev, e)
		}
	}
	what := "NCCL " + version
	if version == "" {
		what = "this NCCL"
	} else {
		ev = append([]string{"NCCL version " + version}, ev...)
	}
	gpus := "Blackwell GPUs"
	if !blackwell {
		gpus = "Blackwell GPUs (the GPU model was not in the log; 'Cuda failure invalid argument' is how an older NCCL fails there)"
	}
	return health.Finding{ID: "nccl-version-blackwell", Severity: health.Fail,
		Summary:     fmt.Sprintf("%s predates %s, the first NCCL for %s", what, BlackwellMinNCCL, gpus),
		Evidence:    ev,
		Remediation: "use NCCL " + BlackwellMinNCCL + " or later (not 2.28.7 or 2.28.9, which crash on eRDMA) with a CUDA that supports the GPU, and rebuild nccl-tests against it"}, true
}

// gidAutoFinding: NCCL_IB_GID_INDEX=-1 given to an NCCL older than
// GIDAutoMinNCCL, which takes it as a GID table index.
func gidAutoFinding(res *TestResult) (health.Finding, bool) {
	if res.NCCL == nil {
		return health.Finding{}, false
	}
	v, version := res.NCCL.Env["NCCL_IB_GID_INDEX"], res.NCCL.NCCLVersion
	if strings.TrimSpace(v) != "-1" || version == "" || !ncclver.Less(version, GIDAutoMinNCCL) {
		return health.Finding{}, false
	}
	return health.Finding{ID: "nccl-gid-index", Severity: health.Fail,
		Summary:  fmt.Sprintf("NCCL_IB_GID_INDEX=-1 with NCCL %s: automatic GID choice exists only from NCCL %s", version, GIDAutoMinNCCL),
		Evidence: []string{"NCCL version " + version, "NCCL_IB_GID_INDEX set to -1"},
		Remediation: "use NCCL >= " + GIDAutoMinNCCL + ", or give the RoCE v2 IPv4 GID index (erdmakit nccl env --nccl-version " + version +
			" says which, and which devices share it)"}, true
}

func diagnoseRows(res *TestResult) []health.Finding {
	if len(res.Rows) == 0 {
		if len(res.Failures) > 0 {
			return nil // the failure finding says it
		}
		return []health.Finding{{ID: "nccl-no-results", Severity: health.Fail,
			Summary:     "the output has no nccl-tests result table",
			Evidence:    firstN(res.Reasons, 4),
			Remediation: "check that the run finished (no timeout or cancel) and that the binary is an nccl-tests program"}}
	}
	var ev []string
	for _, r := range res.Rows {
		o, i := wrong(r.OutOfPlace), wrong(r.InPlace)
		if o > 0 || i > 0 {
			ev = append(ev, fmt.Sprintf("size %d: #wrong %d out-of-place, %d in-place", r.Size, o, i))
		}
	}
	if res.OutOfBounds > 0 {
		ev = append(ev, fmt.Sprintf("# Out of bounds values : %d FAILED", res.OutOfBounds))
	}
	if len(ev) == 0 {
		return nil
	}
	return []health.Finding{{ID: "nccl-wrong", Severity: health.Fail,
		Summary:  "data corruption: results differ from the expected values",
		Evidence: firstN(ev, 8),
		Remediation: "check the MTU of every eRDMA netdev on every host: Alibaba's guide gives 8500 with jumbo frames (NCCL with LL128), " +
			"else 1400, and warns that a wrong MTU causes data consistency problems (ip link set dev ethX mtu 8500); then rerun"}}
}

func wrong(m Measurement) int64 { return m.Wrong.N }

// LargestRow returns the row with the largest size (nil when none).
func LargestRow(res *TestResult) *Row {
	if res == nil || len(res.Rows) == 0 {
		return nil
	}
	best := &res.Rows[0]
	for i := range res.Rows {
		if res.Rows[i].Size > best.Size {
			best = &res.Rows[i]
		}
	}
	return best
}

// rowBusBW is the better of a row's out-of-place and in-place bus bandwidth.
func rowBusBW(r Row) float64 {
	return max(r.OutOfPlace.BusBWGB, r.InPlace.BusBWGB)
}

func diagnoseBusBW(res *TestResult, exp Expectation) []health.Finding {
	r := LargestRow(res)
	if r == nil {
		return nil
	}
	want, source, ok := exp.expected(r.Size, res.Hosts)
	if !ok {
		return nil
	}
	got := rowBusBW(*r)
	ev := []string{
		fmt.Sprintf("size %d: busbw %.2f GB/s out-of-place, %.2f GB/s in-place", r.Size, r.OutOfPlace.BusBWGB, r.InPlace.BusBWGB),
		fmt.Sprintf("expected at least %.2f GB/s: %s", want, source),
	}
	if got >= want {
		return []health.Finding{{ID: "nccl-busbw", Severity: health.OK,
			Summary:  fmt.Sprintf("bus bandwidth %.2f GB/s at %s meets the expected %.2f GB/s", got, units.Format(r.Size, units.Text), want),
			Evidence: ev}}
	}
	if f, ok := pcieCapped(res, exp, got, want, ev); ok {
		return []health.Finding{f}
	}
	return []health.Finding{{ID: "nccl-busbw", Severity: health.Warn,
		Summary:  fmt.Sprintf("bus bandwidth %.2f GB/s at %s is below the expected %.2f GB/s (%.0f%%)", got, units.Format(r.Size, units.Text), want, 100*got/want),
		Evidence: ev,
		Remediation: "check that NCCL used NET/IB on every eRDMA device (NCCL_IB_HCA), GPUDirect RDMA (NCCL_NET_GDR_LEVEL=SYS, nvidia_peermem), " +
			"the two ERIs on different network-card channels, and erdmakit perf for each NIC's write bandwidth"}}
}

// pcieCapped explains a low bus bandwidth on hosts without NVLink that
// used two or more NICs: intra-node all_reduce over PCIe caps it, not eRDMA
// (erdma-controller runbook: 2 NICs x 8 GPUs with GDR ~18-20 GB/s, below
// 1 NIC x 2 GPUs with GDR at 26.6 GB/s, "a limit of the instance's
// topology, not an eRDMA problem").
func pcieCapped(res *TestResult, exp Expectation, got, want float64, ev []string) (health.Finding, bool) {
	l := res.NCCL
	if !exp.NoNVLink || l == nil {
		return health.Finding{}, false
	}
	used := 0
	for _, u := range l.NICs {
		if u.Channels > 0 {
			used++
		}
	}
	if used < 2 {
		return health.Finding{}, false
	}
	ev = append(ev, fmt.Sprintf("%d NET/IB devices carried channels; the GPUs have no NVLink", used))
	return health.Finding{ID: "nccl-busbw", Severity: health.Warn,
		Summary: fmt.Sprintf("bus bandwidth %.2f GB/s is below the expected %.2f GB/s, as expected without NVLink: intra-node traffic "+
			"goes over PCIe and caps what the second NIC adds (not an eRDMA fault)", got, want),
		Evidence: ev,
		Remediation: "judge each NIC alone (erdmakit bw, or nccl run with NCCL_IB_HCA=erdma_0 and 2 GPUs per host), or expect less " +
			"from the two-NIC run on this GPU type (the runbook's 2 NICs x 8 GPUs: ~18-20 GB/s against 26.6 GB/s for 1 NIC x 2 GPUs)"}, true
}

func firstN(s []string, n int) []string {
	out := []string{}
	for _, x := range s {
		if len(out) == n {
			break
		}
		out = append(out, x)
	}
	return out
}

package nccl

import (
	"fmt"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/units"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
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
func Diagnose(res *TestResult, exp Expectation) []erdma.Finding {
	var fs []erdma.Finding
	if res == nil {
		return []erdma.Finding{{ID: "nccl-no-output", Severity: erdma.SeverityFail,
			Summary:     "no nccl-tests output to judge",
			Evidence:    []string{},
			Remediation: "check that the binary is an nccl-tests program (all_reduce_perf) and that the launcher started it"}}
	}
	if len(res.Failures) > 0 {
		fs = append(fs, erdma.Finding{ID: "nccl-test-failure", Severity: erdma.SeverityFail,
			Summary:     "nccl-tests reported a failure",
			Evidence:    firstN(res.Failures, 6),
			Remediation: "read the NCCL WARN lines before the failure (rerun with NCCL_DEBUG=INFO); run erdmakit doctor on the hosts named"})
	}
	if f, ok := blackwellFinding(res); ok {
		fs = append(fs, f)
	}
	if res.NCCL != nil {
		fs = append(fs, diagnoseLog(res.NCCL)...)
	}
	fs = append(fs, diagnoseRows(res)...)
	fs = append(fs, diagnoseBusBW(res, exp)...)
	return fs
}

// DiagnoseRun is Diagnose plus the run's launcher failures.
func DiagnoseRun(run *RunResult, exp Expectation) []erdma.Finding {
	if run == nil {
		return Diagnose(nil, exp)
	}
	var fs []erdma.Finding
	for _, f := range run.Failures {
		fs = append(fs, f.Finding())
	}
	if len(fs) > 0 && (run.Result == nil || len(run.Result.Rows) == 0) {
		return fs // the launch failed: the missing table says nothing more
	}
	return append(fs, Diagnose(withPassedEnv(run.Result, run.Env), exp)...)
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
func Worst(fs []erdma.Finding) erdma.Severity { return health.Status(fs) }

func diagnoseLog(l *LogSummary) []erdma.Finding {
	var fs []erdma.Finding
	if CrashingNCCL(l.NCCLVersion) {
		fs = append(fs, erdma.Finding{ID: "nccl-version-crash", Severity: erdma.SeverityFail,
			Summary:     "NCCL " + l.NCCLVersion + " is known to segfault in ncclNetInit on eRDMA",
			Evidence:    []string{"NCCL version " + l.NCCLVersion},
			Remediation: "use NCCL 2.28.3, or 2.29.7 and later"})
	}
	ib := l.Channels["NET/IB"]
	sock := l.Channels["NET/Socket"]
	switch l.NetTransport() {
	case NetSocket:
		fs = append(fs, socketFallback(l))
	case NetMixed:
		f := socketFallback(l)
		nets := l.Networks
		if len(nets) == 0 {
			nets = []string{"NET/IB", "NET/Socket channels"}
		}
		f.Summary = "some ranks fell back to TCP sockets (" + strings.Join(nets, " and ") + " in one run): eRDMA was not used everywhere"
		fs = append(fs, f)
	case NetRDMA:
		names := make([]string, len(l.IBDevices))
		for i, d := range l.IBDevices {
			names[i] = fmt.Sprintf("%s:%d/%s", d.Name, d.Port, d.Link)
		}
		ev := []string{}
		if l.Network == "IB" {
			ev = append(ev, "Using network IB")
		}
		if len(names) > 0 {
			ev = append(ev, "NET/IB : Using "+strings.Join(names, " "))
		}
		if ib > 0 || sock > 0 {
			ev = append(ev, fmt.Sprintf("channels: NET/IB %d, NET/Socket %d", ib, sock))
		}
		fs = append(fs, erdma.Finding{ID: "nccl-network", Severity: erdma.SeverityOK,
			Summary: "NCCL used RDMA (NET/IB) on " + orNone(strings.Join(names, ", ")), Evidence: ev})
		fs = append(fs, gdrFinding(l))
		if f, ok := nicsFinding(l); ok {
			fs = append(fs, f)
		}
	case NetPlugin:
		fs = append(fs, erdma.Finding{ID: "nccl-network", Severity: erdma.SeverityWarn,
			Summary:     "NCCL used the network plugin " + l.Network + ", not its own NET/IB over eRDMA",
			Evidence:    append([]string{"Using network " + l.Network}, firstN(l.Plugins, 3)...),
			Remediation: "eRDMA is driven by NCCL's internal IB transport: unset NCCL_NET / NCCL_NET_PLUGIN or remove the plugin unless it is meant"})
	}
	if l.MemlockSuspect || l.QPCreateFailures > 0 {
		ev := []string{}
		for _, w := range l.Warnings {
			if strings.Contains(w, "ibv_create_qp") || strings.Contains(w, "-12") || strings.Contains(w, "Cannot allocate memory") {
				ev = append(ev, w)
			}
		}
		if l.QPCreateFailures > 0 {
			ev = append(ev, fmt.Sprintf("%d ibv_create_qp failures", l.QPCreateFailures))
		}
		fs = append(fs, erdma.Finding{ID: "nccl-memlock", Severity: erdma.SeverityFail,
			Summary:     "verbs calls failed with ENOMEM: the locked-memory limit is too low",
			Evidence:    firstN(ev, 6),
			Remediation: "ulimit -l unlimited on every host (LimitMEMLOCK=infinity for containerd/docker/systemd services, then restart them), and rerun"})
	}
	var other []string
	for _, w := range l.Warnings {
		if !strings.Contains(w, "ibv_create_qp") {
			other = append(other, w)
		}
	}
	if len(other) > 0 {
		fs = append(fs, erdma.Finding{ID: "nccl-warnings", Severity: erdma.SeverityWarn,
			Summary:  fmt.Sprintf("NCCL printed %d distinct warning(s)", len(other)),
			Evidence: firstN(other, 6)})
	}
	return fs
}

func socketFallback(l *LogSummary) erdma.Finding {
	ev := []string{}
	if l.Network != "" {
		ev = append(ev, "Using network "+l.Network)
	}
	if n := l.Channels["NET/Socket"]; n > 0 {
		ev = append(ev, fmt.Sprintf("%d channel connections via NET/Socket, %d via NET/IB", n, l.Channels["NET/IB"]))
	}
	if len(l.SocketInterfaces) > 0 {
		ev = append(ev, "NET/Socket : Using "+strings.Join(l.SocketInterfaces, ", "))
	}
	var why []string
	if v, ok := l.Env["NCCL_IB_DISABLE"]; ok && v != "0" {
		ev = append(ev, "NCCL_IB_DISABLE set to "+v)
		why = append(why, "NCCL_IB_DISABLE="+v+" turns NET/IB off: unset it")
	}
	if l.IBNoDevice {
		ev = append(ev, "NET/IB : No device found.")
		if hca, ok := l.Env["NCCL_IB_HCA"]; ok {
			ev = append(ev, "NCCL_IB_HCA set to "+hca)
			why = append(why, "NCCL_IB_HCA="+hca+" matches no usable device: set it to the eRDMA devices ibv_devices lists (erdmakit nccl env)")
		}
		why = append(why, "libibverbs or the eRDMA provider (liberdma) is missing or not found by NCCL: install rdma-core with the eRDMA provider and check ibv_devinfo on every host",
			"the eRDMA device has no ACTIVE port: configure its netdev's IPv4 (guide steps 3-4)")
	}
	for _, p := range l.PluginErrors {
		ev = append(ev, p)
		why = append(why, "a net plugin failed to load; NCCL then uses its internal transports, so this alone does not force sockets unless NCCL_NET names the plugin")
		break
	}
	if len(why) == 0 {
		why = append(why, "NET/IB found no usable device: check ibv_devinfo (PORT_ACTIVE), NCCL_IB_HCA, and the RDMA libraries on every host")
	}
	return erdma.Finding{ID: "nccl-socket-fallback", Severity: erdma.SeverityFail,
		Summary:     "NCCL fell back to TCP sockets: eRDMA was not used",
		Evidence:    firstN(ev, 8),
		Remediation: strings.Join(why, "; ") + "; then rerun with the variables of erdmakit nccl env"}
}

// gdrPathText says which GPUDirect RDMA path NCCL's log shows: DMA-BUF when
// it printed "DMA-BUF is available on GPU device N" (NCCL then registers
// through DMA-BUF wherever the NIC takes it), else peer memory.
func gdrPathText(l *LogSummary) (string, []string) {
	if len(l.DMABUFGPUs) == 0 {
		return "", nil
	}
	ev := make([]string, 0, 4)
	for i, d := range l.DMABUFGPUs {
		if i == 4 {
			ev = append(ev, fmt.Sprintf("... (%d GPUs)", len(l.DMABUFGPUs)))
			break
		}
		ev = append(ev, fmt.Sprintf("DMA-BUF is available on GPU device %d", d))
	}
	return " through DMA-BUF", ev
}

func gdrFinding(l *LogSummary) erdma.Finding {
	path, pathEv := gdrPathText(l)
	switch {
	case l.GDRDMAChannels > 0:
		return erdma.Finding{ID: "nccl-gdr", Severity: erdma.SeverityOK,
			Summary:  fmt.Sprintf("GPUDirect RDMA in use%s (%d channel connections via NET/IB/.../GDRDMA)", path, l.GDRDMAChannels),
			Evidence: append(prefixAll("GPU Direct RDMA Enabled for HCA ", l.GDR.Enabled), pathEv...)}
	case len(l.GDR.Disabled) > 0:
		return erdma.Finding{ID: "nccl-gdr", Severity: erdma.SeverityWarn,
			Summary:  "GPUDirect RDMA disabled: NCCL found neither peer-memory nor DMA-BUF support for " + strings.Join(l.GDR.Disabled, ", "),
			Evidence: append(prefixAll("NET/IB : GPU Direct RDMA Disabled for HCA ", l.GDR.Disabled), pathEv...),
			Remediation: "modprobe nvidia_peermem on every host (again after each reboot; check /sys/module/nvidia_peermem), " +
				"or GPUDirect RDMA through DMA-BUF (kernel >= 5.12, the NVIDIA open kernel module, rdma-core >= 34; erdmakit doctor says which the host has), " +
				"then rerun with NCCL_NET_GDR_LEVEL=SYS"}
	case len(l.GDR.Enabled) > 0:
		return erdma.Finding{ID: "nccl-gdr", Severity: erdma.SeverityWarn,
			Summary:     "GPUDirect RDMA is possible but no channel used it: the GPU<->NIC distance (SYS on eRDMA hosts) is above NCCL's GDR level",
			Evidence:    append(prefixAll("GPU Direct RDMA Enabled for HCA ", l.GDR.Enabled), "0 channel connections via .../GDRDMA"),
			Remediation: "rerun with NCCL_NET_GDR_LEVEL=SYS"}
	}
	if n := l.Channels["NET/IB"]; n > 0 {
		return erdma.Finding{ID: "nccl-gdr", Severity: erdma.SeverityWarn,
			Summary:     fmt.Sprintf("GPUDirect RDMA not used: %d channel connections via NET/IB, none via .../GDRDMA", n),
			Evidence:    []string{fmt.Sprintf("%d NET/IB channel connections, 0 GDRDMA", n)},
			Remediation: "rerun with NCCL_NET_GDR_LEVEL=SYS (with nvidia_peermem loaded, or DMA-BUF: erdmakit doctor's gdr-peermem says which path the host has)"}
	}
	return erdma.Finding{ID: "nccl-gdr", Severity: erdma.SeveritySkip,
		Summary: "the log does not say whether GPUDirect RDMA was used (no GDR or GDRDMA lines; NCCL_DEBUG=INFO needed)", Evidence: []string{}}
}

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
func blackwellFinding(res *TestResult) (erdma.Finding, bool) {
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
	old := version != "" && versionLess(version, BlackwellMinNCCL)
	if !(old && (blackwell || invalid)) && !(version == "" && blackwell && invalid) {
		return erdma.Finding{}, false
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
	return erdma.Finding{ID: "nccl-version-blackwell", Severity: erdma.SeverityFail,
		Summary:     fmt.Sprintf("%s predates %s, the first NCCL for %s", what, BlackwellMinNCCL, gpus),
		Evidence:    ev,
		Remediation: "use NCCL " + BlackwellMinNCCL + " or later (not 2.28.7 or 2.28.9, which crash on eRDMA) with a CUDA that supports the GPU, and rebuild nccl-tests against it"}, true
}

// versionLess compares dotted versions ("2.21.5" < "2.27").
func versionLess(a, b string) bool {
	a, _, _ = strings.Cut(a, "+")
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := 0, 0
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// nicsFinding: with two or more NET/IB devices listed, did every one carry
// channels? At equal GPU<->NIC distance NCCL puts every GPU on the first
// NIC; the runbook's fix is the graph file (NCCL_GRAPH_FILE).
func nicsFinding(l *LogSummary) (erdma.Finding, bool) {
	spread := l.NICBalance()
	if spread == NICsUnknown || spread == NICsOne {
		return erdma.Finding{}, false
	}
	ev := make([]string, 0, len(l.NICs)+1)
	for _, u := range l.NICs {
		ev = append(ev, u.text())
	}
	var unused []string
	for _, d := range l.IBDevices {
		if !slices.ContainsFunc(l.NICs, func(u NICUse) bool { return u.Index == d.Index && u.Channels > 0 }) {
			unused = append(unused, fmt.Sprintf("%s (NET/IB/%d): no channel", d.Name, d.Index))
		}
	}
	ev = append(ev, unused...)
	f := erdma.Finding{ID: "nccl-nics", Evidence: ev}
	graph, hasGraph := l.Env["NCCL_GRAPH_FILE"]
	switch spread {
	case NICsBalanced:
		f.Severity = erdma.SeverityOK
		f.Summary = fmt.Sprintf("every NET/IB device carried traffic, balanced (%d devices)", len(l.NICs))
	case NICsUnbalanced:
		f.Severity = erdma.SeverityOK
		f.Summary = "every NET/IB device carried traffic, unevenly (the least under half the most)"
	case NICsFirstOnly:
		f.Severity = erdma.SeverityWarn
		f.Summary = fmt.Sprintf("only %d of %d NET/IB devices carried traffic: the others sat idle", len(l.IBDevices)-len(unused), len(l.IBDevices))
		if hasGraph {
			f.Summary += " although NCCL_GRAPH_FILE was set"
			f.Remediation = "NCCL_GRAPH_FILE=" + graph + " did not take: check that the file is at that path on every host, that each host runs as many " +
				"ranks as the graph has GPUs per channel (NCCL ignores or refuses a graph naming other GPUs), and the 'NCCL_GRAPH_FILE' and 'XML' lines of the log"
		} else {
			f.Remediation = "at equal GPU<->NIC distance NCCL puts every GPU on the first NIC: give each NIC a channel with a graph file " +
				"(erdmakit nccl env --graph-file /root/nccl-graph.xml, copy it to every host, NCCL_GRAPH_FILE; or erdmakit nccl run --host-env --graph-file PATH)"
		}
	}
	return f, true
}

func diagnoseRows(res *TestResult) []erdma.Finding {
	if len(res.Rows) == 0 {
		if len(res.Failures) > 0 {
			return nil // the failure finding says it
		}
		return []erdma.Finding{{ID: "nccl-no-results", Severity: erdma.SeverityFail,
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
	return []erdma.Finding{{ID: "nccl-wrong", Severity: erdma.SeverityFail,
		Summary:  "data corruption: results differ from the expected values",
		Evidence: firstN(ev, 8),
		Remediation: "check the MTU of every eRDMA netdev on every host: 8500 with jumbo frames enabled, else 1400 " +
			"(ip link set dev ethX mtu 8500); a mismatched MTU corrupts NCCL data over eRDMA; then rerun"}}
}

func wrong(m Measurement) int64 {
	if m.Wrong == nil {
		return 0
	}
	return *m.Wrong
}

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

func diagnoseBusBW(res *TestResult, exp Expectation) []erdma.Finding {
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
		return []erdma.Finding{{ID: "nccl-busbw", Severity: erdma.SeverityOK,
			Summary:  fmt.Sprintf("bus bandwidth %.2f GB/s at %s meets the expected %.2f GB/s", got, units.Format(r.Size, units.Text), want),
			Evidence: ev}}
	}
	if f, ok := pcieCapped(res, exp, got, want, ev); ok {
		return []erdma.Finding{f}
	}
	return []erdma.Finding{{ID: "nccl-busbw", Severity: erdma.SeverityWarn,
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
func pcieCapped(res *TestResult, exp Expectation, got, want float64, ev []string) (erdma.Finding, bool) {
	l := res.NCCL
	if !exp.NoNVLink || l == nil {
		return erdma.Finding{}, false
	}
	used := 0
	for _, u := range l.NICs {
		if u.Channels > 0 {
			used++
		}
	}
	if used < 2 {
		return erdma.Finding{}, false
	}
	ev = append(ev, fmt.Sprintf("%d NET/IB devices carried channels; the GPUs have no NVLink", used))
	return erdma.Finding{ID: "nccl-busbw", Severity: erdma.SeverityWarn,
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

func prefixAll(p string, s []string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		out = append(out, p+"'"+x+"'")
	}
	sort.Strings(out)
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(devices not listed)"
	}
	return s
}

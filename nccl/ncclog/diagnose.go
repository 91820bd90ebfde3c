package ncclog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/health"
)

// crashingNCCL are the NCCL releases known to segfault in
// ncclNetInit on eRDMA (data-on-ack ray-direct-transport-on-erdma README).
var crashingNCCL = []string{"2.28.7", "2.28.9"}

// CrashingNCCL reports whether version (e.g. "2.28.9+cuda12.9") is a
// release known to segfault in ncclNetInit on eRDMA.
func CrashingNCCL(version string) bool {
	v, _, _ := strings.Cut(strings.TrimSpace(version), "+")
	return slices.Contains(crashingNCCL, v)
}

// Diagnose judges what an NCCL_DEBUG=INFO log alone says: the NCCL
// version (known crashes on eRDMA), RDMA or TCP sockets (and why sockets),
// GPUDirect RDMA, the spread over NICs, memlock failures and NCCL's
// warnings. nccl.Diagnose adds what needs the test result and the host.
// A nil summary has no findings.
func Diagnose(l *Summary) []health.Finding {
	if l == nil {
		return nil
	}
	var fs []health.Finding
	if CrashingNCCL(l.NCCLVersion) {
		fs = append(fs, health.Finding{ID: "nccl-version-crash", Severity: health.Fail,
			Summary:     "NCCL " + l.NCCLVersion + " is known to segfault in ncclNetInit on eRDMA",
			Evidence:    []string{"NCCL version " + l.NCCLVersion},
			Remediation: "use NCCL 2.28.3, or 2.29.7 and later"})
	}
	ib := l.Channels["NET/IB"]
	sock := l.Channels["NET/Socket"]
	switch l.netTransport() {
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
		fs = append(fs, health.Finding{ID: "nccl-network", Severity: health.OK,
			Summary: "NCCL used RDMA (NET/IB) on " + orNone(strings.Join(names, ", ")), Evidence: ev})
		fs = append(fs, gdrFinding(l))
		if f, ok := nicsFinding(l); ok {
			fs = append(fs, f)
		}
	case NetPlugin:
		fs = append(fs, health.Finding{ID: "nccl-network", Severity: health.Warn,
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
		fs = append(fs, health.Finding{ID: "nccl-memlock", Severity: health.Fail,
			Summary:     "verbs calls failed with ENOMEM: the locked-memory limit is too low",
			Evidence:    firstN(ev, 6),
			Remediation: "ulimit -l unlimited on every host (LimitMEMLOCK=infinity for containerd/docker/systemd services, then restart them), and rerun"})
	}
	if f, ok := GraphFileFinding(l); ok {
		fs = append(fs, f)
	}
	var other []string
	for _, w := range l.Warnings {
		if !strings.Contains(w, "ibv_create_qp") {
			other = append(other, w)
		}
	}
	if len(other) > 0 {
		fs = append(fs, health.Finding{ID: "nccl-warnings", Severity: health.Warn,
			Summary:  fmt.Sprintf("NCCL printed %d distinct warning(s)", len(other)),
			Evidence: firstN(other, 6)})
	}
	return fs
}

func socketFallback(l *Summary) health.Finding {
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
	return health.Finding{ID: "nccl-socket-fallback", Severity: health.Fail,
		Summary:     "NCCL fell back to TCP sockets: eRDMA was not used",
		Evidence:    firstN(ev, 8),
		Remediation: strings.Join(why, "; ") + "; then rerun with the variables of erdmakit nccl env"}
}

// gdrPathText says which GPUDirect RDMA path NCCL's log shows. NCCL prints
// "DMA-BUF is available on GPU device N" from the GPU's CUDA attribute alone
// (src/init.cc dmaBufSupported), before it asks the NIC; with a peer-memory
// module loaded GDR may run through it (on eRDMA it does: the provider
// registers no dma-buf). So the path is DMA-BUF only when the hosts had no
// peer-memory module (l.HostPeerMem "none") and an HCA shows "GPU Direct
// RDMA Enabled"; otherwise the log does not tell.
func gdrPathText(l *Summary) (string, []string) {
	if len(l.DMABUFGPUs) == 0 {
		return "", nil
	}
	ev := make([]string, 0, 5)
	for i, d := range l.DMABUFGPUs {
		if i == 4 {
			ev = append(ev, fmt.Sprintf("... (%d GPUs)", len(l.DMABUFGPUs)))
			break
		}
		ev = append(ev, fmt.Sprintf("DMA-BUF is available on GPU device %d", d))
	}
	switch {
	case l.HostPeerMem == "none" && len(l.GDR.Enabled) > 0:
		ev = append(ev, "no peer-memory module on the host, GPU Direct RDMA Enabled for HCA "+strings.Join(l.GDR.Enabled, ", ")+": NCCL registered through DMA-BUF")
		return " through DMA-BUF", ev
	case l.HostPeerMem != "" && l.HostPeerMem != "none":
		ev = append(ev, "DMA-BUF is NCCL's GPU-side check only; "+l.HostPeerMem+" was loaded, so the log does not tell which path GDR took "+
			"(on eRDMA peer memory: its provider registers no dma-buf)")
	default:
		ev = append(ev, "DMA-BUF is NCCL's GPU-side check only; whether a peer-memory module was loaded is not known, so the log does not tell which path GDR took")
	}
	return " (the log does not tell whether through DMA-BUF or peer memory)", ev
}

func gdrFinding(l *Summary) health.Finding {
	path, pathEv := gdrPathText(l)
	switch {
	case l.GDRDMAChannels > 0:
		return health.Finding{ID: "nccl-gdr", Severity: health.OK,
			Summary:  fmt.Sprintf("GPUDirect RDMA in use%s (%d channel connections via NET/IB/.../GDRDMA)", path, l.GDRDMAChannels),
			Evidence: append(prefixAll("GPU Direct RDMA Enabled for HCA ", l.GDR.Enabled), pathEv...)}
	case len(l.GDR.Disabled) > 0:
		return health.Finding{ID: "nccl-gdr", Severity: health.Warn,
			Summary:  "GPUDirect RDMA disabled: NCCL found neither peer-memory nor DMA-BUF support for " + strings.Join(l.GDR.Disabled, ", "),
			Evidence: append(prefixAll("NET/IB : GPU Direct RDMA Disabled for HCA ", l.GDR.Disabled), pathEv...),
			Remediation: "modprobe nvidia_peermem on every host (again after each reboot; check /sys/module/nvidia_peermem), " +
				"or GPUDirect RDMA through DMA-BUF (kernel >= 5.12, the NVIDIA open kernel module, rdma-core >= 34; erdmakit doctor says which the host has), " +
				"then rerun with NCCL_NET_GDR_LEVEL=SYS"}
	case len(l.GDR.Enabled) > 0:
		return health.Finding{ID: "nccl-gdr", Severity: health.Warn,
			Summary:     "GPUDirect RDMA is possible but no channel used it: the GPU<->NIC distance (SYS on eRDMA hosts) is above NCCL's GDR level",
			Evidence:    append(prefixAll("GPU Direct RDMA Enabled for HCA ", l.GDR.Enabled), "0 channel connections via .../GDRDMA"),
			Remediation: "rerun with NCCL_NET_GDR_LEVEL=SYS"}
	}
	if n := l.Channels["NET/IB"]; n > 0 {
		return health.Finding{ID: "nccl-gdr", Severity: health.Warn,
			Summary:     fmt.Sprintf("GPUDirect RDMA not used: %d channel connections via NET/IB, none via .../GDRDMA", n),
			Evidence:    []string{fmt.Sprintf("%d NET/IB channel connections, 0 GDRDMA", n)},
			Remediation: "rerun with NCCL_NET_GDR_LEVEL=SYS (with nvidia_peermem loaded, or DMA-BUF: erdmakit doctor's gdr-peermem says which path the host has)"}
	}
	return health.Finding{ID: "nccl-gdr", Severity: health.Skip,
		Summary: "the log does not say whether GPUDirect RDMA was used (no GDR or GDRDMA lines; NCCL_DEBUG=INFO needed)", Evidence: []string{}}
}

// GraphFileFinding: NCCL's graph loader (src/graph/search.cc
// ncclTopoGetChannelFromXml) fails a communicator's init with "XML Import
// Channel : dev N not found" when NCCL_GRAPH_FILE names a GPU the
// communicator does not have on that host. Every communicator reads the
// file, so a split, a sub-communicator or a test on fewer GPUs than the
// graph fails this way: it is not ignored.
func GraphFileFinding(l *Summary) (health.Finding, bool) {
	var ev []string
	for _, w := range l.Warnings {
		if strings.Contains(w, "XML Import Channel") && strings.Contains(w, "not found") {
			ev = append(ev, w)
		}
	}
	if len(ev) == 0 {
		return health.Finding{}, false
	}
	if v, ok := l.Env["NCCL_GRAPH_FILE"]; ok {
		ev = append(ev, "NCCL_GRAPH_FILE set to "+v)
	}
	return health.Finding{ID: "nccl-graph-file", Severity: health.Fail,
		Summary:  "NCCL_GRAPH_FILE names a GPU this communicator does not have: its init failed (XML Import Channel : dev N not found)",
		Evidence: firstN(ev, 6),
		Remediation: "every communicator reads NCCL_GRAPH_FILE: run as many ranks per host as the graph has GPUs " +
			"(erdmakit nccl env --graph-file writes one for all of the host's GPUs), or unset NCCL_GRAPH_FILE for splits, " +
			"sub-communicators and tests on fewer GPUs"}, true
}

// nicsFinding: with two or more NET/IB devices listed, did every one carry
// channels? At equal GPU<->NIC distance NCCL puts every GPU on the first
// NIC; the runbook's fix is the graph file (NCCL_GRAPH_FILE).
func nicsFinding(l *Summary) (health.Finding, bool) {
	spread := l.NICBalance()
	if spread == NICsUnknown || spread == NICsOne {
		return health.Finding{}, false
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
	f := health.Finding{ID: "nccl-nics", Evidence: ev}
	graph, hasGraph := l.Env["NCCL_GRAPH_FILE"]
	switch spread {
	case NICsBalanced:
		f.Severity = health.OK
		f.Summary = fmt.Sprintf("every NET/IB device carried traffic, balanced (%d devices)", len(l.NICs))
	case NICsUnbalanced:
		f.Severity = health.OK
		f.Summary = "every NET/IB device carried traffic, unevenly (the least under half the most)"
	case NICsFirstOnly:
		f.Severity = health.Warn
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

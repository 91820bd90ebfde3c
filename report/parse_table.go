package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	texttable "github.com/erdmakit/erdmakit/internal/render/table"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// The tables of `erdmakit parse`: what a log or a tool's output said, as
// the parsers read it (the verdict under them is the caller's).

// WriteNCCLTestsLogTable prints an nccl-tests log's result the way
// `erdmakit parse nccl` does: a FIELD/VALUE table (collective, ranks,
// nccl-tests version, format, average bus bandwidth, out-of-bounds values),
// the rows as WriteNCCLTestsTable prints them, and what the NCCL lines in
// the same log say as WriteNCCLLogTable prints it. It has no severity
// words: Color changes nothing.
func WriteNCCLTestsLogTable(w io.Writer, r *ncclog.TestResult, o TableOptions) error {
	head := texttable.New("FIELD", "VALUE")
	if r.Collective != "" {
		head.Add("collective", r.Collective)
	}
	head.Add("ranks", fmt.Sprintf("%d on %d host(s)", r.Ranks, r.Hosts))
	if r.Version != "" {
		head.Add("nccl-tests", r.Version)
	}
	if r.Format != "" {
		head.Add("format", r.Format)
	}
	head.Add("avg busbw", fmt.Sprintf("%g GB/s", r.AvgBusBW))
	head.Add("out of bounds", strconv.FormatInt(r.OutOfBounds, 10))
	var b strings.Builder
	_ = head.Write(&b)
	if len(r.Rows) > 0 {
		b.WriteString("\n")
		writeNCCLRows(&b, r)
	}
	if r.NCCL != nil {
		b.WriteString("\nNCCL lines in the log:\n")
		writeNCCLLog(&b, r.NCCL)
	}
	return write(w, &b)
}

// WriteNCCLLogTable prints what an NCCL_DEBUG=INFO log says the way
// `erdmakit parse nccl-log` does: one FIELD/VALUE row per fact the log
// gave (NCCL version, network, transport, IB devices, socket interfaces,
// GPUDirect RDMA per HCA, channels per transport and per NIC, plugins,
// environment, ...). It has no severity words: Color changes nothing.
func WriteNCCLLogTable(w io.Writer, s *ncclog.Summary, o TableOptions) error {
	var b strings.Builder
	writeNCCLLog(&b, s)
	return write(w, &b)
}

func writeNCCLLog(b *strings.Builder, s *ncclog.Summary) {
	t := texttable.New("FIELD", "VALUE")
	add := func(k, v string) {
		if v != "" {
			t.Add(k, v)
		}
	}
	add("nccl version", s.NCCLVersion)
	network := s.Network
	if len(s.Networks) > 1 {
		network += " (ranks disagree: " + strings.Join(s.Networks, ", ") + ")"
	}
	add("network", network)
	add("transport", string(s.Transport))
	var devs []string
	for _, d := range s.IBDevices {
		devs = append(devs, fmt.Sprintf("%s:%d/%s", d.Name, d.Port, d.Link))
	}
	add("ib devices", strings.Join(devs, " "))
	if s.IBNoDevice {
		add("ib", "NET/IB : No device found")
	}
	add("socket interfaces", strings.Join(s.SocketInterfaces, " "))
	if s.OOBInterface != "" {
		add("oob", s.OOBInterface+" "+s.OOBAddress)
	}
	add("gdr enabled", strings.Join(s.GDR.Enabled, " "))
	add("gdr disabled", strings.Join(s.GDR.Disabled, " "))
	var ch []string
	for _, k := range slices.Sorted(maps.Keys(s.Channels)) {
		ch = append(ch, fmt.Sprintf("%s=%d", k, s.Channels[k]))
	}
	add("channels", strings.Join(ch, " "))
	add("gdrdma channels", strconv.Itoa(s.GDRDMAChannels))
	for _, u := range s.NICs {
		add("nic", nicLine(u))
	}
	if s.NICSpread != ncclog.NICsUnknown {
		add("nic balance", string(s.NICSpread))
	}
	if len(s.DMABUFGPUs) > 0 {
		add("dma-buf gpus", strings.Trim(fmt.Sprint(s.DMABUFGPUs), "[]"))
	}
	add("plugins", strings.Join(s.Plugins, ", "))
	for _, e := range s.PluginErrors {
		add("plugin error", e)
	}
	if s.MemlockSuspect {
		add("memlock", "a verbs call failed with ENOMEM: raise the locked-memory limit (ulimit -l unlimited)")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		add("env", k+"="+s.Env[k])
	}
	add("nccl lines", strconv.FormatInt(s.NCCLLines, 10))
	_ = t.Write(b)
}

// nicLine is one NIC NCCL used: its index and name, channels, GIDs.
func nicLine(u ncclog.NICUse) string {
	v := fmt.Sprintf("NET/IB/%d", u.Index)
	if u.Name != "" {
		v += " " + u.Name
	}
	v += fmt.Sprintf(": %d channels, %d GDRDMA", u.Channels, u.GDRDMAChannels)
	for _, g := range u.GIDs {
		v += fmt.Sprintf(", GID %d %s", g.Index, g.Address)
	}
	return v
}

// WritePerftestLogTable prints one perftest tool's output the way
// `erdmakit parse perftest` does: a FIELD/VALUE table of the run's
// parameters, then the bandwidth rows (Gbit/s whatever units the log had)
// and the latency rows (us), each with its own header. Its errors and
// warnings are the caller's to print. It has no severity words: Color
// changes nothing.
func WritePerftestLogTable(w io.Writer, r *perftest.Report, o TableOptions) error {
	head := texttable.New("FIELD", "VALUE")
	add := func(k, v string) {
		if v != "" {
			head.Add(k, v)
		}
	}
	add("test", r.Test)
	add("role", r.Role)
	add("device", r.Device)
	if r.QPs > 0 {
		add("qps", strconv.Itoa(r.QPs))
	}
	add("transport", r.Transport)
	add("link type", r.LinkType)
	if r.Test != "" {
		add("rdma_cm", onOff(r.RDMACM))
	}
	if r.MTU > 0 {
		add("mtu", strconv.Itoa(r.MTU))
	}
	if r.GIDIndex.Known {
		add("gid index", r.GIDIndex.String())
	}
	if r.Units != "" {
		add("log units", r.Units+" (shown as Gbit/s)")
	}
	if r.DurationS > 0 {
		add("run time", strconv.FormatFloat(r.DurationS, 'f', -1, 64)+" s")
	}
	var b strings.Builder
	_ = head.Write(&b)
	if len(r.Results) > 0 {
		t := texttable.New("BYTES", "ITERATIONS", "PEAK Gbit/s", "AVG Gbit/s", "Mpps")
		for _, x := range r.Results {
			t.Add(strconv.FormatInt(x.Bytes, 10), strconv.FormatInt(x.Iterations, 10),
				fmt.Sprintf("%.2f", x.BWPeakGbps), fmt.Sprintf("%.2f", x.BWAvgGbps), fmt.Sprintf("%.6f", x.MsgRateMpps))
		}
		b.WriteString("\n")
		_ = t.Write(&b)
	}
	if len(r.Latency) > 0 {
		t := texttable.New("BYTES", "ITERATIONS", "MIN us", "TYPICAL us", "AVG us", "MAX us", "P99 us", "P99.9 us")
		for _, x := range r.Latency {
			t.Add(strconv.FormatInt(x.Bytes, 10), strconv.FormatInt(x.Iterations, 10), us(x.MinUS), us(x.TypicalUS),
				us(x.AvgUS), us(x.MaxUS), us(x.P99US), us(x.P999US))
		}
		b.WriteString("\n")
		_ = t.Write(&b)
	}
	return write(w, &b)
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// WriteNearestTable prints each GPU's nearest NIC the way `erdmakit topo`
// and `erdmakit parse topo` do (with the PCI addresses where known), then,
// once per distance met, what it means for NCCL. It has no severity words:
// Color changes nothing.
func WriteNearestTable(w io.Writer, nearest []smitopo.Nearest, o TableOptions) error {
	withPCI := false
	for _, n := range nearest {
		withPCI = withPCI || n.GPUAddress != "" || n.NICAddress != ""
	}
	t := texttable.New("GPU", "NEAREST NIC", "DISTANCE", "GDR BY DEFAULT")
	if withPCI {
		t = texttable.New("GPU", "PCI", "NEAREST NIC", "NIC PCI", "DISTANCE", "GDR BY DEFAULT")
	}
	meaning := map[smitopo.Link]string{}
	var order []smitopo.Link
	for _, n := range nearest {
		if withPCI {
			t.Add(strconv.Itoa(n.GPU), n.GPUAddress, n.NIC, n.NICAddress, string(n.Distance), yesNo(n.GDRByDefault))
		} else {
			t.Add(strconv.Itoa(n.GPU), n.NIC, string(n.Distance), yesNo(n.GDRByDefault))
		}
		if _, seen := meaning[n.Distance]; !seen {
			meaning[n.Distance] = n.NCCL
			order = append(order, n.Distance)
		}
	}
	var b strings.Builder
	_ = t.Write(&b)
	b.WriteString("\n")
	for _, l := range order {
		b.WriteString(meaning[l] + "\n")
	}
	return write(w, &b)
}

// WriteTopoTable prints an nvidia-smi topo -m matrix the way `erdmakit
// parse topo` does: the matrix and its NIC legend (Matrix.WriteText), then
// the nearest NIC per GPU as WriteNearestTable prints it.
func WriteTopoTable(w io.Writer, m *smitopo.Matrix, o TableOptions) error {
	var b strings.Builder
	if err := m.WriteText(&b); err != nil {
		return err
	}
	if n := m.Nearest(); len(n) > 0 {
		b.WriteString("\n")
		if err := WriteNearestTable(&b, n, o); err != nil {
			return err
		}
	}
	return write(w, &b)
}

// WriteTopoComparisonTable prints where nvidia-smi's matrix and
// erdmakit's disagree the way `erdmakit topo --compare` does: the cells
// both list and disagree on (or that they agree on every one), then the
// endpoints only one of them lists. It has no severity words: Color
// changes nothing.
func WriteTopoComparisonTable(w io.Writer, c *smitopo.Comparison, o TableOptions) error {
	var b strings.Builder
	if len(c.Differences) == 0 {
		b.WriteString("nvidia-smi agrees on every GPU<->NIC and GPU<->GPU PCIe cell both list.\n")
	} else {
		t := texttable.New("A", "B", "ERDMAKIT (SYSFS)", "NVIDIA-SMI")
		for _, d := range c.Differences {
			t.Add(d.A, d.B, string(d.Ours), string(d.Their))
		}
		_ = t.Write(&b)
	}
	if len(c.OnlyTheirs) > 0 {
		fmt.Fprintln(&b, "only in nvidia-smi:", c.OnlyTheirs)
	}
	if len(c.OnlyOurs) > 0 {
		fmt.Fprintln(&b, "only in erdmakit:", c.OnlyOurs)
	}
	return write(w, &b)
}

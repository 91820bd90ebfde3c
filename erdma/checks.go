package erdma

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/nvrules"
	"github.com/erdmakit/erdmakit/internal/units"
)

// InstallerURL is Alibaba's eRDMA installer script (the guide, step 2).
const InstallerURL = "http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh"

// InstallerCommand is the guide's eRDMA driver installer, word for word,
// for a host whose /etc/os-release says ID=osID and VERSION_ID=version:
// Ubuntu 24.04 has its own (the dkms module removed first, the installer
// tarball named); every other OS the guide lists (Alibaba Cloud Linux 3,
// CentOS 8.5/8.4/7.9, Ubuntu 22.04/20.04/18.04) runs env_setup.sh --egs.
// It downloads into the working directory, as the guide does.
func InstallerCommand(osID, version string) string {
	if osID == "ubuntu" && version == "24.04" {
		return installerUbuntu2404
	}
	return installerEgs
}

const (
	installerEgs        = "wget " + InstallerURL + " && bash env_setup.sh --egs"
	installerUbuntu2404 = "rm -rf /lib/modules/$(uname -r)/updates/dkms/erdma.ko && curl -O " + InstallerURL +
		` && bash env_setup.sh --url "http://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.4.3.tar.gz"`
)

// Remediation texts shared by several checks.
var (
	installers   = "`" + InstallerCommand("", "") + "` (Ubuntu 24.04: `" + InstallerCommand("ubuntu", "24.04") + "`)"
	fixAttachERI = "attach an ERI: `erdmakit setup --dry-run` first (it plans the ERIs the instance type allows, each on its own " +
		"network card, and installs nothing without --install-driver), then `erdmakit setup`; supported GPU types: " +
		"ebmgn7ex/ebmgn7ix/ebmgn7vx, ebmgn8is, gn8is, ebmgn9g/ebmgn9gc/ebmgn9ge; the driver, if missing: " + installers +
		", checked with `eadm ver`; without erdmakit: OpenAPI CreateNetworkInterface with NetworkInterfaceTrafficMode=HighPerformance, " +
		"then AttachNetworkInterface with NetworkCardIndex=0 (and NetworkCardIndex=1 for a second ERI)"
	fixDriver = "modprobe erdma; if the module is not installed: the guide's installer " + installers + ", then `eadm ver` " +
		"(or `erdmakit setup --dry-run`, then `erdmakit setup --install-driver`)"
)

const (
	// ERIDetachNote is the guide's condition on every "detach and attach
	// again" remedy: an ERI is detached only from a stopped instance.
	ERIDetachNote = "detaching an ERI requires stopping the instance first (the guide)"
	mdTokenCmd    = `TOKEN=$(curl -s -X PUT -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 60' http://100.100.100.200/latest/api/token)`
)

// checkHostRead reports the reads that failed while the inventory was
// taken: each names its file or source.
func checkHostRead(_ context.Context, d *diag) health.Finding {
	if len(d.inv.Errors) == 0 {
		return health.Finding{Severity: health.OK, Summary: "every file and source of the host was read",
			Evidence: []string{"root " + d.path()}}
	}
	return health.Finding{Severity: health.Warn,
		Summary:     fmt.Sprintf("%d read(s) failed; the checks below use what could be read", len(d.inv.Errors)),
		Evidence:    append([]string(nil), d.inv.Errors...),
		Remediation: "check that the files named exist and are readable (run as root); on a recorded host, record it again with `erdmakit record`",
	}
}

// checkInstanceProfile: guide step 1, the instance must be a type that
// supports ERI; its profile says what to expect.
func checkInstanceProfile(_ context.Context, d *diag) health.Finding {
	inst := d.inv.Instance
	if inst == nil || inst.Type == "" {
		var ev []string
		if d.opt.InstanceError != nil {
			ev = append(ev, d.opt.InstanceError.Error())
		}
		return health.Finding{Severity: health.Skip, Evidence: ev,
			Summary:     "instance type unknown: the metadata service was not asked or did not answer (not on ECS), or nothing was recorded; expected ERI count and bandwidth unknown",
			Remediation: "name the instance type (ecs.<family>.<size>), or run on the ECS instance where the metadata service answers",
		}
	}
	ev := []string{fmt.Sprintf("instance type %q (source %s)", inst.Type, inst.Source)}
	if inst.ID != "" {
		ev = append(ev, fmt.Sprintf("instance id %q, region %q", inst.ID, inst.Region))
	}
	t, err := ParseInstanceType(inst.Type)
	if err != nil {
		return health.Finding{Severity: health.Warn, Summary: err.Error(), Evidence: ev,
			Remediation: "name the instance type as ecs.<family>.<size>, e.g. ecs.ebmgn8is.32xlarge"}
	}
	p := d.inv.Profile
	if p == nil {
		return health.Finding{Severity: health.Skip,
			Summary: fmt.Sprintf("family %q is not a known eRDMA GPU family: expected ERI count and bandwidth unknown (not guessed)", t.Family),
			Evidence: append(ev, "known families: "+strings.Join(KnownFamilies(), ", "),
				"the ERI count of any type is EriQuantity in the DescribeInstanceTypes OpenAPI"),
		}
	}
	ev = append(ev, fmt.Sprintf("profile %s: ERIs %s, GPUs %s, ib_write_bw aggregate %s",
		p.Family, unknownIfZero(p.ERIs, ""), unknownIfZero(p.GPUs, ""), unknownIfZeroF(p.WriteGbps, " Gbit/s")),
		"profile source: "+p.Source)
	return health.Finding{Severity: health.OK, Summary: fmt.Sprintf("%s is an eRDMA GPU type (family %s)", t, p.Family), Evidence: ev}
}

func unknownIfZero(n int, unit string) string {
	if n == 0 {
		return "unknown"
	}
	return strconv.Itoa(n) + unit
}

func unknownIfZeroF(f float64, unit string) string {
	if f == 0 {
		return "unknown"
	}
	return strconv.FormatFloat(f, 'f', -1, 64) + unit
}

// checkERDMADevices: guide steps 1 and 4, ibv_devinfo shows the instance's
// eRDMA devices (at most 2; as many as the profile says).
func checkERDMADevices(_ context.Context, d *diag) health.Finding {
	var ev []string
	for _, dev := range d.inv.Devices {
		ev = append(ev, fmt.Sprintf("%s: driver %q, PCI %s id %q, eRDMA %t", d.ibPath(dev.Name), dev.Driver, dev.PCIAddress, dev.PCIID, dev.ERDMA))
	}
	n := len(d.erdma)
	if n == 0 {
		if len(ev) == 0 {
			ev = append(ev, d.path("sys/class/infiniband")+": no RDMA device at all")
		}
		sum := "no eRDMA device on this host: none in sys/class/infiniband is bound to erdma or has PCI id 1ded:107f"
		if !d.loaded("erdma") {
			sum += " (and the erdma driver is not loaded: attached ERIs need the driver installed)"
		}
		return health.Finding{Severity: health.Fail,
			Summary:     sum,
			Evidence:    ev,
			Remediation: fixAttachERI,
		}
	}
	names := make([]string, n)
	for i, dev := range d.erdma {
		names[i] = dev.Name
	}
	p := d.inv.Profile
	switch {
	case n > MaxERIs:
		return health.Finding{Severity: health.Warn,
			Summary:  fmt.Sprintf("%d eRDMA devices (%s): the guide allows at most %d per instance", n, strings.Join(names, ", "), MaxERIs),
			Evidence: ev, Remediation: "stop the instance, then detach the extra ERIs: OpenAPI DetachNetworkInterface (" + ERIDetachNote + ")"}
	case p != nil && p.ERIs > 0 && n < p.ERIs:
		return health.Finding{Severity: health.Warn,
			Summary: fmt.Sprintf("%d eRDMA device(s) (%s) but %s has %d ERIs: bandwidth is below what the type offers",
				n, strings.Join(names, ", "), p.Family, p.ERIs),
			Evidence:    append(ev, "profile source: "+p.Source),
			Remediation: "attach the missing ERI: OpenAPI CreateNetworkInterface with NetworkInterfaceTrafficMode=HighPerformance, then AttachNetworkInterface with NetworkCardIndex=1 (a channel not used by the first ERI); then configure its IP in the OS",
		}
	case p != nil && p.ERIs > 0 && n > p.ERIs:
		return health.Finding{Severity: health.Warn,
			Summary:  fmt.Sprintf("%d eRDMA devices (%s) but %s has %d ERIs", n, strings.Join(names, ", "), p.Family, p.ERIs),
			Evidence: append(ev, "profile source: "+p.Source)}
	}
	expect := "expected count unknown for this instance type"
	if p != nil && p.ERIs > 0 {
		expect = fmt.Sprintf("as %s has", p.Family)
	}
	return health.Finding{Severity: health.OK, Summary: fmt.Sprintf("%d eRDMA device(s): %s (%s)", n, strings.Join(names, ", "), expect), Evidence: ev}
}

// checkNetworkCardChannel: guide step 1, two ERIs must sit on different
// network-card channels or their total bandwidth halves. The channel
// (NetworkCardIndex) is not visible inside the host: only hints are.
func checkNetworkCardChannel(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) < 2 {
		return health.Finding{Severity: health.Skip, Summary: fmt.Sprintf("%d eRDMA device(s): no second ERI to share a channel with", len(d.erdma))}
	}
	ev := []string{"the NetworkCardIndex of an ERI is only visible through the OpenAPI DescribeNetworkInterfaces; from inside the host NUMA node, PCI bus and subnet are hints only"}
	for _, dev := range d.erdma {
		ev = append(ev, fmt.Sprintf("%s: NUMA node %d (%s), PCI %s, subnet %s",
			dev.Name, dev.NUMANode, d.ibPath(dev.Name, "device/numa_node"), orUnknown(dev.PCIAddress), orUnknown(d.subnetOf(dev))))
	}
	var same []string
	for i := 0; i < len(d.erdma); i++ {
		for j := i + 1; j < len(d.erdma); j++ {
			a, b := d.erdma[i], d.erdma[j]
			numa := a.NUMANode >= 0 && a.NUMANode == b.NUMANode
			bus := pciBus(a.PCIAddress) != "" && pciBus(a.PCIAddress) == pciBus(b.PCIAddress)
			if numa && bus {
				same = append(same, a.Name+"+"+b.Name)
			}
		}
	}
	fix := "check with OpenAPI DescribeNetworkInterfaces (InstanceId=<id>): each ERI's NetworkCardIndex must differ; " +
		"if they do not, stop the instance, DetachNetworkInterface the second ERI and AttachNetworkInterface it again with the other NetworkCardIndex " +
		"(" + ERIDetachNote + "; ModifyNetworkInterfaceAttribute without NetworkCardIndex can move it back onto one channel)"
	if p := d.inv.Profile; p != nil && p.WriteGbps > 0 {
		fix += fmt.Sprintf("; or measure: ib_write_bw on both devices at once (guide step 5) should reach about %g Gbit/s in total", p.WriteGbps)
	}
	if len(same) > 0 {
		return health.Finding{Severity: health.Warn,
			Summary:     fmt.Sprintf("%s share NUMA node and PCI bus: they may sit on one network-card channel (total bandwidth halves); this cannot be decided from inside the host", strings.Join(same, ", ")),
			Evidence:    ev,
			Remediation: fix,
		}
	}
	return health.Finding{Severity: health.OK,
		Summary:     "the ERIs differ in NUMA node or PCI bus: a hint of separate network-card channels, not a proof",
		Evidence:    ev,
		Remediation: fix,
	}
}

// pciBus returns "domain:bus" of a PCI address ("0000:3b:00.0" -> "0000:3b").
func pciBus(addr string) string {
	parts := strings.Split(addr, ":")
	if len(parts) != 3 {
		return ""
	}
	return parts[0] + ":" + parts[1]
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// subnetOf returns the IPv4 network of dev's paired netdev ("10.0.0.0/24").
func (d *diag) subnetOf(dev *Device) string {
	nd := d.netdevOf(dev)
	if nd == nil {
		return ""
	}
	var nets []string
	for _, a := range nd.IPv4 {
		if _, n, err := net.ParseCIDR(a); err == nil {
			nets = append(nets, n.String())
		}
	}
	return strings.Join(nets, ",")
}

// checkDriver: guide step 2, the erdma module is loaded and every eRDMA
// PCI function is bound to it.
func checkDriver(_ context.Context, d *diag) health.Finding {
	ev := []string{d.moduleEvidence("erdma")}
	var unbound []string
	for _, dev := range d.erdma {
		ev = append(ev, fmt.Sprintf("%s: driver %q", d.ibPath(dev.Name, "device/driver"), dev.Driver))
		if dev.Driver != "erdma" {
			unbound = append(unbound, dev.Name)
		}
	}
	if !d.loaded("erdma") && len(d.erdma) == 0 {
		return health.Finding{Severity: health.Fail, Summary: "the erdma driver is not loaded", Evidence: ev, Remediation: fixDriver}
	}
	if len(unbound) > 0 {
		return health.Finding{Severity: health.Fail,
			Summary:  fmt.Sprintf("%s not bound to the erdma driver", strings.Join(unbound, ", ")),
			Evidence: ev, Remediation: fixDriver}
	}
	flavour := "in-kernel driver (no compat_mode parameter)"
	for _, dev := range d.erdma {
		if dev.CompatMode != "" {
			flavour = "Alibaba's out-of-tree driver (has parameters/compat_mode)"
		}
	}
	if !d.loaded("erdma") {
		return health.Finding{Severity: health.OK, Summary: "devices are bound to erdma (built into the kernel: no sys/module entry)", Evidence: ev}
	}
	return health.Finding{Severity: health.OK, Summary: "erdma loaded: " + flavour, Evidence: ev}
}

// checkEadm: guide step 2, `eadm ver` shows the driver version.
func checkEadm(_ context.Context, d *diag) health.Finding {
	if len(d.inv.Tools) == 0 {
		return health.Finding{Severity: health.Skip,
			Summary:  "programs on PATH were not looked for (asked not to, or a recording without erdmakit/tools.json)",
			Evidence: []string{"no tool entries (" + d.source("PATH", "erdmakit/tools.json") + ")"}}
	}
	t := d.tools["eadm"]
	if t == nil || t.Path == "" {
		return health.Finding{Severity: health.Warn,
			Summary:     "eadm not found on PATH: the eRDMA software package is not installed (driver version unknown)",
			Evidence:    []string{"eadm: not found (" + d.source("PATH", "erdmakit/tools.json") + ")"},
			Remediation: "install the eRDMA package with `env_setup.sh --egs` (Alibaba's installer), then check with `eadm ver`",
		}
	}
	v := t.Version
	if v == "" {
		v = "(version not read)"
	}
	ev := []string{fmt.Sprintf("%s: `eadm ver` -> %q", t.Path, t.Version)}
	sum := "eadm " + v
	// The guide records the OFED version too (`ofed_info -s`).
	if o := d.tools["ofed_info"]; o != nil && o.Path != "" {
		ev = append(ev, fmt.Sprintf("%s: `ofed_info -s` -> %q", o.Path, o.Version))
		if o.Version != "" {
			sum += ", OFED " + o.Version
		}
	} else {
		ev = append(ev, "ofed_info: not found ("+d.source("PATH", "erdmakit/tools.json")+"): the OFED version the guide records is unknown")
	}
	return health.Finding{Severity: health.OK, Summary: sum, Evidence: ev}
}

// checkUVerbs: guide step 2, user-space verbs need ib_uverbs and a
// /dev/infiniband/uverbsN per device.
func checkUVerbs(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	ev := []string{d.moduleEvidence("ib_uverbs")}
	var bad []string
	for _, dev := range d.erdma {
		switch {
		case dev.UVerbs == "":
			bad = append(bad, dev.Name+" has no uverbs device")
			ev = append(ev, fmt.Sprintf("%s: no infiniband_verbs/uverbs* entry", d.ibPath(dev.Name, "device/infiniband_verbs")))
		case !dev.UVerbsPresent:
			bad = append(bad, d.path("dev/infiniband", dev.UVerbs)+" missing")
			ev = append(ev, fmt.Sprintf("%s: %s bound, %s missing", dev.Name, dev.UVerbs, d.path("dev/infiniband", dev.UVerbs)))
		default:
			ev = append(ev, fmt.Sprintf("%s: %s present", dev.Name, d.path("dev/infiniband", dev.UVerbs)))
		}
	}
	if len(bad) > 0 {
		return health.Finding{Severity: health.Fail, Summary: strings.Join(bad, "; "), Evidence: ev,
			Remediation: "modprobe ib_uverbs; in a container pass the devices: --device=/dev/infiniband/uverbs0 (and uverbs1), or mount /dev/infiniband"}
	}
	if !d.loaded("ib_uverbs") {
		return health.Finding{Severity: health.OK, Summary: "uverbs devices present (ib_uverbs built into the kernel)", Evidence: ev}
	}
	return health.Finding{Severity: health.OK, Summary: "ib_uverbs loaded, every eRDMA device has its uverbs char device", Evidence: ev}
}

// gpuState is what the two GPU checks know: whether there is a GPU driver,
// its version and the GPU count (0 when unknown), and where it came from.
type gpuState struct {
	present bool
	version string
	count   int
	ev      []string
	reason  string
}

func (d *diag) gpu() gpuState {
	var s gpuState
	if g := d.inv.GPU; g != nil {
		if g.Available {
			s.present, s.version, s.count = true, g.DriverVersion, g.Count
			s.ev = append(s.ev, fmt.Sprintf("NVML: %d GPU(s), driver %q", g.Count, g.DriverVersion))
			return s
		}
		s.reason = g.Reason
		s.ev = append(s.ev, fmt.Sprintf("NVML not usable: %s", g.Reason))
	}
	s.ev = append(s.ev, d.moduleEvidence("nvidia"))
	if d.loaded("nvidia") {
		s.present = true
		s.version = d.modules["nvidia"].Version
	}
	return s
}

// gpuExpected reports whether the instance type is a GPU type (every known
// profile is).
func (d *diag) gpuExpected() bool { return d.inv.Profile != nil }

// checkGPUDriver: guide step 2, the GPU driver; nvidia_peermem ships with
// drivers >= nvrules.PeermemMin.
func checkGPUDriver(_ context.Context, d *diag) health.Finding {
	g := d.gpu()
	if !g.present {
		if d.gpuExpected() {
			return health.Finding{Severity: health.Fail,
				Summary:     fmt.Sprintf("no NVIDIA driver loaded on a GPU instance type (%s)", d.inv.Profile.Family),
				Evidence:    g.ev,
				Remediation: nvrules.InstallDriver(),
			}
		}
		sum := "no NVIDIA GPU driver on this host: GPU checks skipped"
		if g.reason != "" {
			sum += " (" + g.reason + ")"
		}
		return health.Finding{Severity: health.Skip, Summary: sum, Evidence: g.ev}
	}
	var findings []string
	sev := health.OK
	_, err := nvrules.Major(g.version)
	bundles, _ := nvrules.BundlesPeermem(g.version)
	switch {
	case g.version == "":
		sev = health.Warn
		findings = append(findings, "driver version unknown (no sys/module/nvidia/version, no NVML)")
	case err != nil:
		sev = health.Warn
		findings = append(findings, err.Error())
	case !bundles:
		sev = health.Warn
		findings = append(findings, nvrules.TooOld(g.version)+": no bundled nvidia_peermem (GPUDirect RDMA needs nv_peer_mem)")
	default:
		findings = append(findings, fmt.Sprintf("driver %s (%s: nvidia_peermem bundled)", g.version, nvrules.AtLeast()))
	}
	if p := d.inv.Profile; p != nil && p.GPUs > 0 && g.count > 0 && g.count != p.GPUs {
		sev = health.Worst(sev, health.Warn)
		findings = append(findings, fmt.Sprintf("%d GPU(s) but %s has %d", g.count, p.Family, p.GPUs))
	} else if g.count > 0 {
		findings = append(findings, fmt.Sprintf("%d GPU(s)", g.count))
	}
	f := health.Finding{Severity: sev, Summary: strings.Join(findings, "; "), Evidence: g.ev}
	if sev != health.OK {
		f.Remediation = nvrules.Upgrade() + "; check with nvidia-smi"
	}
	return f
}

// peermemAtBoot is the step that makes nvidia_peermem load at every boot.
const peermemAtBoot = "it must be loaded again after every reboot: echo nvidia_peermem > " + nvrules.PeermemFile

// checkPeermem: guide step 2, GPUDirect RDMA needs nvidia_peermem (driver
// >= nvrules.PeermemMin) or nv_peer_mem, loaded again after every reboot, or DMA-BUF
// (inv.GPU.DMABUF, from nvml); it fails only when neither is available.
func checkPeermem(_ context.Context, d *diag) health.Finding {
	g := d.gpu()
	if !g.present {
		return health.Finding{Severity: health.Skip, Summary: "no NVIDIA GPU driver: GPUDirect RDMA not applicable (see gpu-driver)"}
	}
	ev := []string{d.moduleEvidence("nvidia_peermem"), d.moduleEvidence("nv_peer_mem")}
	path := ""
	if gi := d.inv.GPU; gi != nil && gi.GDRPath != "" {
		path = gi.GDRPath
		ev = append(ev, fmt.Sprintf("GPUDirect RDMA path reported: %q", gi.GDRPath))
	}
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if path == "" && d.loaded(m) {
			path = m
		}
	}
	refused := ""
	if gi := d.inv.GPU; gi != nil && gi.DMABUF != "" {
		ev = append(ev, "GPUDirect RDMA through DMA-BUF (kernel >= 5.12, open NVIDIA module, rdma-core >= 34, an RDMA provider with reg_dmabuf_mr): "+gi.DMABUF)
		if len(gi.DMABUFRefusedBy) > 0 {
			refused = strings.Join(gi.DMABUFRefusedBy, ", ")
			ev = append(ev, "DMA-BUF is not supported by the RDMA provider "+refused+
				" (rdma-core's provider has no reg_dmabuf_mr, or NCCL's probe ibv_reg_dmabuf_mr(fd -1) answered EOPNOTSUPP): GPUDirect RDMA there needs nvidia_peermem")
		}
	}
	if path == "" {
		f := health.Finding{Severity: health.Fail,
			Summary:     "GPUDirect RDMA not ready: neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not supported",
			Evidence:    ev,
			Remediation: nvrules.LoadPeermem() + "; " + peermemAtBoot + "; " + nvrules.DMABUFAlternative,
		}
		switch gi := d.inv.GPU; {
		case gi == nil || gi.DMABUF == "":
			f.Evidence = append(f.Evidence, "GPUDirect RDMA through DMA-BUF: not checked (no GPU facts)")
		case refused != "":
			// No DMA-BUF way out: the provider refuses dma-bufs.
			f.Summary = "GPUDirect RDMA not ready: neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF is not supported by the RDMA provider " + refused
			f.Remediation = nvrules.LoadPeermem() + "; " + peermemAtBoot + " (DMA-BUF is no alternative here: the " + refused + " provider registers no dma-buf)"
		case gi.DMABUF == "unknown":
			// DMA-BUF may work: what decides it was not all seen.
			f.Severity = health.Warn
			f.Summary = "GPUDirect RDMA not proven: neither nvidia_peermem nor nv_peer_mem is loaded, and DMA-BUF support could not be decided"
		}
		return f
	}
	if path == "dmabuf" {
		return health.Finding{Severity: health.OK,
			Summary:  "GPUDirect RDMA ready through DMA-BUF (nvidia_peermem not needed; " + gdrLevelNote(d.inv.GPU) + ")",
			Evidence: ev}
	}
	if gi := d.inv.GPU; gi != nil {
		for _, n := range gi.Nearest {
			ev = append(ev, fmt.Sprintf("GPU %d -> %s: %s (nvidia-smi topo distance)", n.GPU, n.Device, n.Distance))
		}
	}
	return health.Finding{Severity: health.OK,
		Summary:  path + " loaded: GPUDirect RDMA ready (" + gdrLevelNote(d.inv.GPU) + ")",
		Evidence: ev}
}

// gdrLevelNote says what NCCL needs to use GPUDirect RDMA over eRDMA, from
// DecideGDRLevel.
func gdrLevelNote(g *GPUInfo) string {
	l := DecideGDRLevel(g)
	switch {
	case l.Level == "":
		return "every GPU is within NCCL's default GDR level PXB: no NCCL_NET_GDR_LEVEL needed"
	case l.Measured && l.Distance != l.Level:
		return fmt.Sprintf("NCCL uses it over eRDMA only with NCCL_NET_GDR_LEVEL=%s: GPU<->eRDMA distance up to %s (nvidia-smi's word; NCCL's %s)", l.Level, l.Distance, l.Level)
	case l.Measured:
		return fmt.Sprintf("NCCL uses it over eRDMA only with NCCL_NET_GDR_LEVEL=%s: GPU<->eRDMA distance up to %s", l.Level, l.Level)
	}
	return "NCCL uses it over eRDMA only with NCCL_NET_GDR_LEVEL=SYS: GPU<->eRDMA distance not measured"
}

// checkNetdevIP: guide step 3, the secondary NIC of each ERI is configured
// in the OS: up, with an IPv4 address.
func checkNetdevIP(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	var ev, bad, fixes []string
	sev := health.OK
	for _, dev := range d.erdma {
		mac, macOK := macFromNodeGUID(dev.NodeGUID)
		nd := d.netdevOf(dev)
		if nd == nil {
			sev = health.Fail
			want := "its MAC"
			if macOK {
				want = "MAC " + mac + " (from node_guid " + dev.NodeGUID + ")"
			}
			bad = append(bad, dev.Name+" has no paired netdev")
			ev = append(ev, fmt.Sprintf("%s: no network interface with %s", dev.Name, want))
			fixes = append(fixes, fmt.Sprintf("bring up the interface with %s (ip -br link | grep -i %s)", want, mac))
			continue
		}
		ev = append(ev, fmt.Sprintf("%s -> %s (by %s): operstate %q (%s), MTU %d, IPv4 %v", dev.Name, nd.Name, orUnknown(dev.NetdevBy),
			nd.OperState, d.source("netlink", "erdmakit/netdevs.json"), nd.MTU, nd.IPv4))
		if !macOK {
			mac = nd.MAC
		}
		switch {
		case nd.OperState != "up":
			sev = health.Fail
			bad = append(bad, fmt.Sprintf("%s (%s) is %s", nd.Name, dev.Name, orUnknown(nd.OperState)))
			fixes = append(fixes, "ip link set "+nd.Name+" up")
		}
		if len(nd.IPv4) == 0 {
			sev = health.Fail
			bad = append(bad, fmt.Sprintf("%s (%s) has no IPv4 address", nd.Name, dev.Name))
			fixes = append(fixes, fmt.Sprintf("%s; IP=$(curl -s -H \"X-aliyun-ecs-metadata-token: $TOKEN\" http://100.100.100.200/latest/meta-data/network/interfaces/macs/%s/primary-ip-address); "+
				"MASK=$(curl -s -H \"X-aliyun-ecs-metadata-token: $TOKEN\" http://100.100.100.200/latest/meta-data/network/interfaces/macs/%s/netmask); "+
				"ip addr add $IP/$MASK dev %s (and make it persistent in the distribution's network configuration)", mdTokenCmd, mac, mac, nd.Name))
		}
	}
	if sev == health.OK {
		return health.Finding{Severity: health.OK, Summary: "every ERI's netdev is up with an IPv4 address", Evidence: ev}
	}
	return health.Finding{Severity: sev, Summary: strings.Join(bad, "; ") + ": the secondary NIC is not configured in the OS",
		Evidence: ev, Remediation: strings.Join(fixes, "; ")}
}

// checkPortActive: guide step 4, every port PORT_ACTIVE; ibv_devinfo's
// "invalid state" means the secondary NIC is not configured (its IP).
func checkPortActive(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	var ev, bad, fixes []string
	for _, dev := range d.erdma {
		if len(dev.Ports) == 0 {
			bad = append(bad, dev.Name+" has no ports")
			ev = append(ev, d.ibPath(dev.Name, "ports")+": no port")
			continue
		}
		for _, p := range dev.Ports {
			ev = append(ev, fmt.Sprintf("%s: %q, phys_state %q", d.ibPath(dev.Name, "ports", strconv.Itoa(p.Number), "state"),
				fmt.Sprintf("%d: %s", p.StateCode, p.State), p.PhysState))
			if p.State == "ACTIVE" {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s port %d is %s", dev.Name, p.Number, orUnknown(p.State)))
			nd := "its netdev"
			if dev.Netdev != "" {
				nd = dev.Netdev
			}
			fixes = append(fixes, fmt.Sprintf("configure %s (up, with its IPv4: see netdev-ip), then check `ibv_devinfo -d %s` shows PORT_ACTIVE", nd, dev.Name))
		}
	}
	if len(bad) == 0 {
		return health.Finding{Severity: health.OK, Summary: "every eRDMA port is ACTIVE", Evidence: ev}
	}
	return health.Finding{Severity: health.Fail,
		Summary:     strings.Join(bad, "; ") + " (ibv_devinfo: not PORT_ACTIVE / \"invalid state\": the secondary NIC is not configured, check its IP)",
		Evidence:    ev,
		Remediation: strings.Join(fixes, "; "),
	}
}

// checkTransport: domain section 3, compat (RoCE v2) vs iWARP decides how
// queue pairs connect; both ends must use the same.
func checkTransport(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	modes := map[Transport][]string{}
	var ev []string
	for _, dev := range d.erdma {
		cm := "absent (in-kernel driver)"
		if dev.CompatMode != "" {
			cm = strconv.Quote(dev.CompatMode)
		}
		ev = append(ev, fmt.Sprintf("%s: node_type %q (%s), compat_mode %s (%s) -> %s", dev.Name, dev.NodeType,
			d.ibPath(dev.Name, "node_type"), cm, d.path("sys/module/erdma/parameters/compat_mode"), dev.Transport))
		modes[dev.Transport] = append(modes[dev.Transport], dev.Name)
	}
	fixCompat := "GPU hosts run compat mode: reinstall the driver with `env_setup.sh --egs`, or set the parameter: " +
		"echo 'options erdma compat_mode=Y' > /etc/modprobe.d/erdma.conf && rmmod erdma && modprobe erdma"
	if len(modes) > 1 {
		var parts []string
		for _, t := range []Transport{TransportRoCE, TransportIWARP, TransportIB, TransportUnknown} {
			if names, ok := modes[t]; ok {
				parts = append(parts, fmt.Sprintf("%s: %s", t, strings.Join(names, ", ")))
			}
		}
		return health.Finding{Severity: health.Fail,
			Summary:     "eRDMA devices in different modes (" + strings.Join(parts, "; ") + "): a connection needs both ends in the same mode",
			Evidence:    ev,
			Remediation: fixCompat,
		}
	}
	switch {
	case len(modes[TransportRoCE]) > 0:
		return health.Finding{Severity: health.OK,
			Summary:  "compat mode (RoCE v2): queue pairs connect by out-of-band GID exchange + modify_qp (perftest without -R, NCCL) and by rdma_cm; peers must be GPU-instance eRDMA in compat mode too",
			Evidence: ev}
	case len(modes[TransportIWARP]) > 0:
		return health.Finding{Severity: health.Warn,
			Summary:     "iWARP mode: queue pairs reach RTS only through rdma_cm (perftest -R); the out-of-band exchange NCCL and perftest use by default fails (modify_qp EINVAL); peers must be iWARP too",
			Evidence:    ev,
			Remediation: fixCompat,
		}
	}
	return health.Finding{Severity: health.Warn, Summary: "transport mode could not be told (node_type unreadable)", Evidence: ev,
		Remediation: "check `cat /sys/class/infiniband/*/node_type` and /sys/module/erdma/parameters/compat_mode"}
}

// checkGIDIndex: domain section 3, the GID to use is the RoCE v2 entry
// ::ffff:<IPv4 of the netdev>; its index differs per device.
func checkGIDIndex(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	var ev, bad []string
	idx := map[int]bool{}
	roce := 0
	for _, dev := range d.erdma {
		if dev.Transport == TransportIWARP {
			ev = append(ev, dev.Name+": iWARP, its one GID is the MAC: no RoCE v2 index to choose")
			continue
		}
		roce++
		for _, p := range dev.Ports {
			gids := d.ibPath(dev.Name, "ports", strconv.Itoa(p.Number), "gids")
			if p.RecommendedGIDIndex < 0 {
				var have []string
				for _, g := range p.GIDs {
					have = append(have, fmt.Sprintf("%d=%s(%s)", g.Index, g.GID, orUnknown(g.Type)))
				}
				bad = append(bad, fmt.Sprintf("%s port %d has no RoCE v2 GID ::ffff:<IPv4>", dev.Name, p.Number))
				ev = append(ev, fmt.Sprintf("%s: populated %v", gids, have))
				continue
			}
			idx[p.RecommendedGIDIndex] = true
			var g GID
			for _, x := range p.GIDs {
				if x.Index == p.RecommendedGIDIndex {
					g = x
				}
			}
			ev = append(ev, fmt.Sprintf("%s/%d: %q, %s: %q, ndev %q", gids, g.Index, g.GID,
				d.ibPath(dev.Name, "ports", strconv.Itoa(p.Number), "gid_attrs/types", strconv.Itoa(g.Index)), g.Type, g.Netdev))
		}
	}
	if roce == 0 {
		return health.Finding{Severity: health.Skip, Summary: "iWARP mode: GIDs are not used to connect (rdma_cm)", Evidence: ev}
	}
	if len(bad) > 0 {
		return health.Finding{Severity: health.Fail, Summary: strings.Join(bad, "; ") + ": NCCL_IB_GID_INDEX has nothing to point at",
			Evidence:    ev,
			Remediation: "give the paired netdev its IPv4 address (see netdev-ip): the driver adds the ::ffff:<IPv4> RoCE v2 entry itself"}
	}
	var list []int
	for i := range idx {
		list = append(list, i)
	}
	sort.Ints(list)
	if len(list) == 1 {
		return health.Finding{Severity: health.OK, Summary: fmt.Sprintf("RoCE v2 IPv4 GID at index %d: NCCL_IB_GID_INDEX=%d", list[0], list[0]), Evidence: ev}
	}
	return health.Finding{Severity: health.OK,
		Summary: fmt.Sprintf("RoCE v2 IPv4 GIDs at indexes %v (they differ per device): NCCL_IB_GID_INDEX=-1 NCCL_IB_ADDR_FAMILY=AF_INET NCCL_IB_ROCE_VERSION_NUM=2 "+
			"(NCCL >= 2.21.5; an older NCCL takes one index for every device)", list),
		Evidence: ev}
}

// mtuSource is where the MTU rule comes from: Alibaba's "Enable eRDMA on a
// GPU instance" page (alibabacloud.com/help/ecs/user-guide/on-the-gpu-instance-configuration-erdma,
// "Enable Jumbo Frames"): 8500 with jumbo frames when NCCL uses the LL128
// protocol, else 1400; a wrong MTU setting causes data consistency problems.
const mtuSource = "Alibaba's guide, Enable Jumbo Frames: 8500 with jumbo frames (NCCL with LL128), else 1400; " +
	"it warns that a wrong MTU causes data consistency problems"

// checkMTU: the guide's MTU rule (mtuSource), the same on every ERI.
func checkMTU(_ context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	var ev, names []string
	mtus := map[int][]string{}
	for _, dev := range d.erdma {
		nd := d.netdevOf(dev)
		if nd == nil {
			ev = append(ev, dev.Name+": no paired netdev (see netdev-ip)")
			continue
		}
		ev = append(ev, fmt.Sprintf("%s: MTU %d (%s)", nd.Name, nd.MTU, d.source("netlink", "erdmakit/netdevs.json")))
		mtus[nd.MTU] = append(mtus[nd.MTU], nd.Name)
		names = append(names, nd.Name)
	}
	if len(names) == 0 {
		return health.Finding{Severity: health.Skip, Summary: "no paired netdev to check", Evidence: ev}
	}
	setAll := func(mtu int) string {
		var s []string
		for _, n := range names {
			s = append(s, fmt.Sprintf("ip link set %s mtu %d", n, mtu))
		}
		return strings.Join(s, "; ")
	}
	fix := setAll(8500) + " (with jumbo frames; without them " + setAll(1400) + "); the same on every ERI and on the peer hosts, persistent in the network configuration"
	if len(mtus) > 1 {
		var parts []string
		keys := make([]int, 0, len(mtus))
		for m := range mtus {
			keys = append(keys, m)
		}
		sort.Ints(keys)
		for _, m := range keys {
			parts = append(parts, fmt.Sprintf("%d on %s", m, strings.Join(mtus[m], ", ")))
		}
		return health.Finding{Severity: health.Fail,
			Summary:  "ERI MTUs disagree (" + strings.Join(parts, "; ") + "): the guide allows 8500 (jumbo frames) or 1400, one of them everywhere",
			Evidence: append(ev, "source: "+mtuSource), Remediation: fix}
	}
	var mtu int
	for m := range mtus {
		mtu = m
	}
	if want := ERIMTU(d.inv.Instance); want != 0 {
		jumbo := "jumbo frames enabled (EnableJumboFrame)"
		if want == MTUSmall {
			jumbo = "jumbo frames not enabled (EnableJumboFrame false)"
		}
		ev = append(ev, "instance: "+jumbo+fmt.Sprintf(": the guide wants MTU %d", want))
		if mtu != want {
			return health.Finding{Severity: health.Fail,
				Summary:  fmt.Sprintf("MTU %d on every ERI, but the instance has %s: the guide wants %d (a wrong MTU causes data corruption)", mtu, jumbo, want),
				Evidence: ev, Remediation: setAll(want) + "; persistent in the network configuration"}
		}
	}
	switch mtu {
	case 8500:
		return health.Finding{Severity: health.OK, Summary: "MTU 8500 on every ERI (jumbo frames; port active_mtu 4096)", Evidence: ev}
	case 1400:
		return health.Finding{Severity: health.OK, Summary: "MTU 1400 on every ERI (no jumbo frames; with jumbo frames the guide gives 8500 for NCCL with LL128)", Evidence: ev}
	}
	return health.Finding{Severity: health.Warn,
		Summary:  fmt.Sprintf("MTU %d: the guide gives 8500 with jumbo frames, else 1400, and warns that a wrong MTU causes data consistency problems", mtu),
		Evidence: append(ev, "source: "+mtuSource), Remediation: fix}
}

// memlockSource is where "unlimited" comes from: not Alibaba's guide, but
// rdma-core (Documentation/libibverbs.md: a verbs process must be allowed to
// lock all of its registered memory plus the memory of its QPs and CQs) and
// NCCL-over-RDMA practice (an eRDMA pod with LimitMEMLOCK=64K failed every
// ibv_create_qp with "Unknown error -12": domain doc section 5).
const memlockSource = "rdma-core Documentation/libibverbs.md (verbs must lock every registered region and the QP and CQ memory) " +
	"and NCCL-over-RDMA practice; not a step of Alibaba's guide"

// checkMemlock: domain section 5, memlock unlimited (memlockSource); at 64
// KiB every ibv_create_qp fails with ENOMEM.
func checkMemlock(_ context.Context, d *diag) health.Finding {
	l := d.inv.Memlock
	if l == nil {
		return health.Finding{Severity: health.Skip, Summary: "RLIMIT_MEMLOCK not read"}
	}
	ev := []string{fmt.Sprintf("RLIMIT_MEMLOCK %s (%s)", l, d.source("getrlimit", "erdmakit/limits.json"))}
	if l.SoftUnlimited() {
		return health.Finding{Severity: health.OK, Summary: "memlock unlimited", Evidence: ev}
	}
	ev = append(ev, "why unlimited: "+memlockSource)
	fix := "ulimit -l unlimited (this shell); persistent: add '* soft memlock unlimited' and '* hard memlock unlimited' to /etc/security/limits.conf; " +
		"systemd services (containerd, docker): LimitMEMLOCK=infinity; containers: --ulimit memlock=-1"
	const sixteenGiB = 16 << 30
	if l.Soft >= sixteenGiB {
		return health.Finding{Severity: health.Warn,
			Summary:  fmt.Sprintf("memlock limited to %s: large registrations may fail; rdma-core and NCCL deployments use unlimited", FormatLimit(l.Soft, false)),
			Evidence: ev, Remediation: fix}
	}
	sum := fmt.Sprintf("memlock %s: every ibv_create_qp fails with ENOMEM (NCCL WARN Call to ibv_create_qp failed with error Unknown error -12)", FormatLimit(l.Soft, false))
	if l.Soft > 64<<10 {
		sum = fmt.Sprintf("memlock %s: queue pairs and memory registrations beyond it fail with ENOMEM; rdma-core and NCCL deployments use unlimited", FormatLimit(l.Soft, false))
	}
	return health.Finding{Severity: health.Fail, Summary: sum, Evidence: ev, Remediation: fix}
}

// RLimInfinity is the rlimit value that means no limit (RLIM_INFINITY).
const RLimInfinity = ^uint64(0)

// NewLimit is a limit as getrlimit or a recording gives it: Unlimited
// follows the soft value.
func NewLimit(soft, hard uint64) *Limit {
	return &Limit{Soft: soft, Hard: hard, Unlimited: soft == RLimInfinity}
}

// FormatLimit is an rlimit as the doctor and setup print it: "unlimited"
// (RLIM_INFINITY, or unlimited set), else the size in binary units.
func FormatLimit(v uint64, unlimited bool) string {
	if unlimited || v == RLimInfinity {
		return "unlimited"
	}
	return units.Format(int64(v), units.Text)
}

// String is the limit as the doctor and setup print it: "soft 64 KiB,
// hard unlimited".
func (l *Limit) String() string {
	return "soft " + FormatLimit(l.Soft, l.Unlimited) + ", hard " + FormatLimit(l.Hard, false)
}

// SoftUnlimited reports whether the soft limit is unlimited: the memlock
// rule's one test (the doctor's check and setup's limits stage).
func (l *Limit) SoftUnlimited() bool { return l.Unlimited || l.Soft == RLimInfinity }

// HardUnlimited reports whether the hard limit is unlimited.
func (l *Limit) HardUnlimited() bool { return l.Hard == RLimInfinity }

// IsLimitDrop reports whether a counter name is a rate-limit drop counter
// (hw_bps_limit_drop_cnt, rx_pps_limit_drop_cnt, ...).
func IsLimitDrop(name string) bool { return strings.HasSuffix(name, "_limit_drop_cnt") }

// checkRateLimitDrops: domain section 4, the *_limit_drop_cnt counters are
// drops by the instance's bandwidth/PPS meter; they must not rise.
func checkRateLimitDrops(ctx context.Context, d *diag) health.Finding {
	if len(d.erdma) == 0 {
		return noERDMA()
	}
	type key struct {
		dev  string
		port int
	}
	var keys []key
	first := map[key]map[string]uint64{}
	var ev []string
	for _, dev := range d.erdma {
		for _, p := range dev.Ports {
			k := key{dev.Name, p.Number}
			keys = append(keys, k)
			first[k] = p.Counters
		}
	}
	live := d.opt.Counters != nil && d.opt.Interval > 0
	if live {
		for _, k := range keys {
			c, err := d.opt.Counters.ReadCounters(ctx, k.dev, k.port)
			if err != nil {
				return health.Finding{Severity: health.Warn, Summary: "could not read hw_counters: " + err.Error(),
					Evidence: []string{d.ibPath(k.dev, "ports", strconv.Itoa(k.port), "hw_counters")}}
			}
			first[k] = c
		}
	}
	var names []string
	total := uint64(0)
	for _, k := range keys {
		dir := d.ibPath(k.dev, "ports", strconv.Itoa(k.port), "hw_counters")
		var parts []string
		for _, n := range sortedLimitDrops(first[k]) {
			parts = append(parts, fmt.Sprintf("%s=%d", n, first[k][n]))
			total += first[k][n]
			names = append(names, n)
		}
		if len(parts) == 0 {
			ev = append(ev, dir+": no *_limit_drop_cnt counter")
			continue
		}
		ev = append(ev, dir+": "+strings.Join(parts, " "))
	}
	if len(names) == 0 {
		return health.Finding{Severity: health.Skip,
			Summary:  "no rate-limit drop counters (hw_counters appear with driver r0.2.33; older drivers have none)",
			Evidence: ev}
	}
	if !live {
		if total == 0 {
			return health.Finding{Severity: health.OK, Summary: "no rate-limit drops counted since the driver loaded (one reading)", Evidence: ev}
		}
		return health.Finding{Severity: health.Skip,
			Summary:  fmt.Sprintf("%d rate-limit drops counted since the driver loaded; a single reading cannot show whether they are rising (read them twice some interval apart on the live host)", total),
			Evidence: ev}
	}
	t := time.NewTimer(d.opt.Interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return health.Finding{Severity: health.Skip, Summary: "interrupted before the second counter reading: " + ctx.Err().Error(), Evidence: ev}
	case <-t.C:
	}
	var rising []string
	for _, k := range keys {
		c, err := d.opt.Counters.ReadCounters(ctx, k.dev, k.port)
		if err != nil {
			return health.Finding{Severity: health.Warn, Summary: "could not read hw_counters the second time: " + err.Error(), Evidence: ev}
		}
		var parts []string
		for _, n := range sortedLimitDrops(c) {
			parts = append(parts, fmt.Sprintf("%s=%d", n, c[n]))
			if before, ok := first[k][n]; ok && c[n] > before {
				rising = append(rising, fmt.Sprintf("%s port %d %s +%d", k.dev, k.port, n, c[n]-before))
			}
		}
		ev = append(ev, fmt.Sprintf("after %s: %s: %s", d.opt.Interval, d.ibPath(k.dev, "ports", strconv.Itoa(k.port), "hw_counters"), strings.Join(parts, " ")))
	}
	if len(rising) > 0 {
		return health.Finding{Severity: health.Warn,
			Summary:     fmt.Sprintf("rate-limit drops rising over %s (%s): traffic exceeds the instance's bandwidth/PPS meter", d.opt.Interval, strings.Join(rising, ", ")),
			Evidence:    ev,
			Remediation: "lower the offered load (fewer QPs or streams, or pace them) to the instance type's bandwidth, or spread it over both ERIs; check that the two ERIs are on different network-card channels (network-card-channel)",
		}
	}
	return health.Finding{Severity: health.OK, Summary: fmt.Sprintf("rate-limit drop counters did not rise over %s", d.opt.Interval), Evidence: ev}
}

func sortedLimitDrops(c map[string]uint64) []string {
	var names []string
	for n := range c {
		if IsLimitDrop(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

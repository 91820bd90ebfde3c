package doctor

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// The GPU checks join nvml's facts to the host's inventory and profile: they
// live here, so that nvml depends on no erdma (and builds without cgo on any
// OS).

// gpuInfo is the inventory's summary of a GPU report (erdma.GPUInfo): what
// erdma.DecideGDRLevel and nccl.AdviseEnv read.
func gpuInfo(r *nvml.Report) erdma.GPUInfo {
	info := erdma.GPUInfo{Available: r.Available, Reason: r.Reason, GDRPath: r.GDR.Path, DMABUF: string(r.GDR.DMABUF.Supported),
		DMABUFRefusedBy: r.GDR.DMABUF.RefusedBy(), GDRPeermem: r.GDR.Peermem, GDRPersistent: r.GDR.Persistent}
	if r.GPUs != nil {
		info.Count = len(r.GPUs.GPUs)
		info.DriverVersion = r.GPUs.DriverVersion
		info.NVLink = string(r.GPUs.NVLink())
	}
	if r.Topology != nil {
		for _, n := range r.Topology.Nearest {
			info.Nearest = append(info.Nearest, erdma.GPUNIC{GPU: n.GPU, Device: n.NIC, Distance: string(n.Distance)})
		}
	}
	return info
}

// gpuCountFinding is the gpu-count check: the instance has the GPUs its
// type promises (profile nil or GPUs 0: unknown, never guessed).
func gpuCountFinding(r *nvml.Report, p *erdma.Profile) health.Finding {
	f := health.Finding{ID: nvml.FindingGPUCount, Evidence: []string{}}
	want := 0
	if p != nil {
		want = p.GPUs
	}
	if !r.Available {
		f.Evidence = append(f.Evidence, "NVML: "+r.Error)
		if want > 0 {
			f.Severity = health.Fail
			f.Summary = fmt.Sprintf("cannot count GPUs (%s); %s has %d", r.Reason, p.Family, want)
		} else {
			f.Severity = health.Skip
			f.Summary = "cannot count GPUs: " + r.Reason
		}
		f.Remediation = r.Remediation
		return f
	}
	got := len(r.GPUs.GPUs)
	for _, g := range r.GPUs.GPUs {
		f.Evidence = append(f.Evidence, fmt.Sprintf("GPU%d %s %s numa %d", g.Index, g.Name, g.PCIAddress, g.NUMANode))
	}
	switch {
	case want == 0 && got == 0:
		f.Severity, f.Summary = health.Warn, "NVML sees no GPUs"
		f.Remediation = "check that the GPUs are visible (lspci -d 10de:) and that no GPU fell off the bus (dmesg | grep -i xid)"
	case want == 0:
		f.Severity, f.Summary = health.OK, fmt.Sprintf("%d GPUs (instance type's expected count unknown)", got)
	case got == want:
		f.Severity, f.Summary = health.OK, fmt.Sprintf("%d GPUs, as %s has", got, p.Family)
	default:
		f.Severity = health.Fail
		f.Summary = fmt.Sprintf("%d GPUs, %s has %d", got, p.Family, want)
		f.Remediation = "a GPU is missing: check lspci -d 10de: and dmesg for Xid errors; stop and start the instance, or open a ticket"
	}
	return f
}

// gpuDistanceFinding is the gpu-nic-distance check: each GPU's nearest
// eRDMA device, and whether NCCL uses GPUDirect RDMA across that distance
// (erdma.DecideGDRLevel, the one rule nccl env and AdviseEnv share).
func gpuDistanceFinding(r *nvml.Report) health.Finding {
	f := health.Finding{ID: nvml.FindingGPUDistance, Evidence: []string{}}
	if r.Topology == nil {
		f.Severity, f.Summary = health.Skip, "no GPUs to place"
		if !r.Available {
			f.Summary = "no GPUs to place: " + r.Reason
		}
		return f
	}
	t := r.Topology
	f.Evidence = append(f.Evidence, t.Errors...)
	nics := 0
	for _, e := range t.Matrix.Endpoints {
		if !e.IsGPU() {
			nics++
		}
	}
	if nics == 0 {
		f.Severity, f.Summary = health.Skip, "no eRDMA devices to measure GPU distances to"
		return f
	}
	var far []string
	worst := smitopo.LinkSelf
	for _, n := range t.Nearest {
		f.Evidence = append(f.Evidence, fmt.Sprintf("GPU%d %s -> %s %s: %s", n.GPU, n.GPUAddress, n.NIC, n.NICAddress, n.Distance))
		if n.Distance.Rank() > worst.Rank() {
			worst = n.Distance
		}
		if !n.GDRByDefault {
			far = append(far, fmt.Sprintf("GPU%d", n.GPU))
		}
	}
	gpus := len(t.Nearest)
	if r.GPUs != nil { // nil only in a report not made by nvml.Inspect
		gpus = len(r.GPUs.GPUs)
	}
	if len(t.Errors) > 0 || len(t.Nearest) < gpus {
		f.Severity = health.Warn
		f.Summary = fmt.Sprintf("%d devices not found in the PCI tree; %d of %d GPUs placed", len(t.Errors), len(t.Nearest), gpus)
		f.Remediation = "the recorded or live sysfs lacks sys/bus/pci/devices entries for some GPUs or eRDMA devices"
		return f
	}
	f.Severity = health.OK
	info := gpuInfo(r)
	level := erdma.DecideGDRLevel(&info).Level // the one rule the doctor, nccl env and AdviseEnv share
	if level == "" {
		f.Summary = fmt.Sprintf("every GPU's nearest eRDMA device is at most %s: NCCL uses GPUDirect RDMA by default", worst)
		return f
	}
	f.Summary = fmt.Sprintf("nearest eRDMA device is up to %s away (%s): %s", worst, strings.Join(far, ","), worst.NCCLMeaning())
	if r.GDR.Ready {
		f.Remediation = fmt.Sprintf("to use GPUDirect RDMA over eRDMA: export NCCL_NET_GDR_LEVEL=%s", level)
	} else {
		f.Remediation = fmt.Sprintf("load nvidia_peermem first (see %s), then export NCCL_NET_GDR_LEVEL=%s", erdma.FindingGDRPeermem, level)
	}
	return f
}

// NICsOf picks the RDMA devices to place GPUs against: the eRDMA devices,
// else every PCI RDMA device. note says which fallback was taken ("" for
// eRDMA devices).
func NICsOf(devs []erdma.Device) (nics []nvml.NIC, note string) {
	var erdmaNICs, all []nvml.NIC
	for _, d := range devs {
		if d.PCIAddress == "" {
			continue
		}
		n := nvml.NIC{Name: d.Name, PCIAddress: d.PCIAddress}
		all = append(all, n)
		if d.ERDMA {
			erdmaNICs = append(erdmaNICs, n)
		}
	}
	if len(erdmaNICs) > 0 {
		return erdmaNICs, ""
	}
	if len(all) > 0 {
		return all, "no eRDMA devices: showing every PCI RDMA device"
	}
	return nil, "no RDMA devices with a PCI address: GPU<->NIC distances cannot be computed"
}

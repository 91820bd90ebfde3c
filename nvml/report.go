package nvml

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// Report is everything erdmakit knows about a host's GPUs: what NVML says,
// GPUDirect RDMA readiness and the GPU<->NIC topology.
type Report struct {
	Root string `json:"root"`
	// Available is false when NVML could not be used; Reason says why in
	// plain words and Error gives NVML's code.
	Available   bool   `json:"available"`
	Reason      string `json:"reason,omitempty"`
	Error       string `json:"error,omitempty"`
	Remediation string `json:"remediation,omitempty"`
	// GPUs is nil when NVML is unavailable.
	GPUs *GPUs `json:"gpus,omitempty"`
	GDR  GDR   `json:"gdr"`
	// Topology is nil when there are no GPUs to place.
	Topology *Topology `json:"topology,omitempty"`
}

// Inspect reads the GPUs through lib, GPUDirect RDMA readiness and the
// GPU<->NIC topology under root. NVML failures do not fail it: they are
// the report's Reason (the doctor turns them into findings). Only a
// cancelled context is an error.
func Inspect(ctx context.Context, lib Library, root string, nics []NIC) (*Report, error) {
	rep := &Report{Root: root}
	gpus, err := ReadGPUs(ctx, lib, root)
	var ie *InitError
	switch {
	case err == nil:
		rep.Available, rep.GPUs = true, gpus
	case errors.As(err, &ie):
		rep.Reason, rep.Error, rep.Remediation = ie.Reason, ie.Error(), ie.Remediation
	default:
		return nil, err
	}
	drv := ""
	if gpus != nil {
		drv = gpus.DriverVersion
	}
	rep.GDR = ReadGDR(root, drv)
	if gpus != nil && len(gpus.GPUs) > 0 {
		rep.Topology = ComputeTopology(root, gpus.GPUs, nics)
	}
	return rep, nil
}

// GPUInfo fills the inventory's summary of the GPUs (erdma.GPUInfo).
func (r *Report) GPUInfo() erdma.GPUInfo {
	info := erdma.GPUInfo{Available: r.Available, Reason: r.Reason, GDRPath: r.GDR.Path, DMABUF: string(r.GDR.DMABUF.Supported)}
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

// Ids of the checks this package owns (the doctor package runs them in the
// guide's order); gpu-driver and gdr-peermem are erdma's.
const (
	FindingGPUCount    = "gpu-count"
	FindingGPUDistance = "gpu-nic-distance"
)

// Unavailable is the report of a host whose NVML could not even be set up
// (a recorded snapshot that does not parse): every GPU check skips with err
// as its reason.
func Unavailable(root string, err error) *Report {
	return &Report{Root: root, Reason: "NVML not set up", Error: err.Error()}
}

// CountFinding is the gpu-count check: the instance has the GPUs its type
// promises (profile nil or GPUs 0: unknown, never guessed).
func (r *Report) CountFinding(profile *erdma.Profile) erdma.Finding { return r.checkCount(profile) }

// DistanceFinding is the gpu-nic-distance check: each GPU's nearest eRDMA
// device and what that distance means for NCCL.
func (r *Report) DistanceFinding() erdma.Finding { return r.checkDistance() }

// checkCount: the instance has the GPUs its type promises.
func (r *Report) checkCount(p *erdma.Profile) erdma.Finding {
	f := erdma.Finding{ID: FindingGPUCount, Evidence: []string{}}
	want := 0
	if p != nil {
		want = p.GPUs
	}
	if !r.Available {
		f.Evidence = append(f.Evidence, "NVML: "+r.Error)
		if want > 0 {
			f.Severity = erdma.SeverityFail
			f.Summary = fmt.Sprintf("cannot count GPUs (%s); %s has %d", r.Reason, p.Family, want)
		} else {
			f.Severity = erdma.SeveritySkip
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
		f.Severity, f.Summary = erdma.SeverityWarn, "NVML sees no GPUs"
		f.Remediation = "check that the GPUs are visible (lspci -d 10de:) and that no GPU fell off the bus (dmesg | grep -i xid)"
	case want == 0:
		f.Severity, f.Summary = erdma.SeverityOK, fmt.Sprintf("%d GPUs (instance type's expected count unknown)", got)
	case got == want:
		f.Severity, f.Summary = erdma.SeverityOK, fmt.Sprintf("%d GPUs, as %s has", got, p.Family)
	default:
		f.Severity = erdma.SeverityFail
		f.Summary = fmt.Sprintf("%d GPUs, %s has %d", got, p.Family, want)
		f.Remediation = "a GPU is missing: check lspci -d 10de: and dmesg for Xid errors; stop and start the instance, or open a ticket"
	}
	return f
}

// checkDistance: where each GPU's nearest eRDMA device is, and whether
// NCCL will use GPUDirect RDMA across that distance.
func (r *Report) checkDistance() erdma.Finding {
	f := erdma.Finding{ID: FindingGPUDistance, Evidence: []string{}}
	if r.Topology == nil {
		f.Severity, f.Summary = erdma.SeveritySkip, "no GPUs to place"
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
		f.Severity, f.Summary = erdma.SeveritySkip, "no eRDMA devices to measure GPU distances to"
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
	if len(t.Errors) > 0 || len(t.Nearest) < len(r.GPUs.GPUs) {
		f.Severity = erdma.SeverityWarn
		f.Summary = fmt.Sprintf("%d devices not found in the PCI tree; %d of %d GPUs placed", len(t.Errors), len(t.Nearest), len(r.GPUs.GPUs))
		f.Remediation = "the recorded or live sysfs lacks sys/bus/pci/devices entries for some GPUs or eRDMA devices"
		return f
	}
	f.Severity = erdma.SeverityOK
	info := r.GPUInfo()
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
func NICsOf(devs []erdma.Device) (nics []NIC, note string) {
	var erdmaNICs, all []NIC
	for _, d := range devs {
		if d.PCIAddress == "" {
			continue
		}
		n := NIC{Name: d.Name, PCIAddress: d.PCIAddress}
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

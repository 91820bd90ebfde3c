package nvml

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
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
	}
	if r.Topology != nil {
		for _, n := range r.Topology.Nearest {
			info.Nearest = append(info.Nearest, erdma.GPUNIC{GPU: n.GPU, Device: n.NIC, Distance: string(n.Distance)})
		}
	}
	return info
}

// Finding ids, stable: the doctor's JSON and users' alerting use them.
const (
	FindingGPUCount    = "gpu-count"
	FindingGPUDriver   = "gpu-driver"
	FindingGDRPeermem  = "gdr-peermem"
	FindingGPUDistance = "gpu-nic-distance"
)

// Findings are the doctor's GPU checks, in the guide's order: GPU count
// against the instance profile (nil when unknown), driver >= 470, GPUDirect
// RDMA readiness (guide step 2), and the GPU<->eRDMA distances with what
// they mean for NCCL.
func (r *Report) Findings(profile *erdma.Profile) []erdma.Finding {
	return []erdma.Finding{r.checkCount(profile), r.checkDriver(), r.checkGDR(), r.checkDistance()}
}

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

// checkDriver: guide step 2, a GPU driver new enough to bundle
// nvidia_peermem.
func (r *Report) checkDriver() erdma.Finding {
	f := erdma.Finding{ID: FindingGPUDriver, Evidence: []string{}}
	if !r.Available {
		f.Severity, f.Summary = erdma.SeverityFail, "NVIDIA driver unusable: "+r.Reason
		f.Evidence = append(f.Evidence, "NVML: "+r.Error)
		f.Remediation = r.Remediation
		return f
	}
	v := r.GPUs.DriverVersion
	f.Evidence = append(f.Evidence, "NVML driver version: "+v)
	if r.GPUs.CUDAVersion != "" {
		f.Evidence = append(f.Evidence, "CUDA driver API: "+r.GPUs.CUDAVersion)
	}
	major := r.GPUs.DriverMajor()
	switch {
	case major >= PeermemMinDriver:
		f.Severity, f.Summary = erdma.SeverityOK, fmt.Sprintf("driver %s (>= %d, bundles nvidia_peermem)", v, PeermemMinDriver)
	case major == 0:
		f.Severity, f.Summary = erdma.SeverityWarn, fmt.Sprintf("driver version %q does not parse", v)
	default:
		f.Severity = erdma.SeverityWarn
		f.Summary = fmt.Sprintf("driver %s predates %d: no bundled nvidia_peermem", v, PeermemMinDriver)
		f.Remediation = "upgrade the NVIDIA driver to >= 470 (or use the legacy nv_peer_mem module)"
	}
	return f
}

// checkGDR: guide step 2, GPUDirect RDMA through DMA-BUF or nvidia_peermem
// (or nv_peer_mem); fails only when neither path is available, warns when
// DMA-BUF could not be decided.
func (r *Report) checkGDR() erdma.Finding {
	g := r.GDR
	f := erdma.Finding{ID: FindingGDRPeermem, Evidence: append([]string{}, g.Evidence...)}
	if g.Ready && g.Path == GDRDMABUF {
		f.Severity = erdma.SeverityOK
		f.Summary = "GPUDirect RDMA ready through DMA-BUF (" + g.DMABUF.Summary() + ")"
		if g.Peermem != "" {
			f.Summary += "; " + g.Peermem + " also loaded, NCCL prefers DMA-BUF"
		} else {
			f.Summary += ": nvidia_peermem not needed"
		}
		return f
	}
	if g.Ready {
		f.Severity = erdma.SeverityOK
		f.Summary = "GPUDirect RDMA ready through " + g.Path
		if g.Version != "" {
			f.Summary += " " + g.Version
		}
		if g.Path != GDRMemoryPeers && g.PersistenceKnown && !g.Persistent {
			f.Summary += " (not in /etc/modules-load.d: gone after a reboot)"
			f.Severity = erdma.SeverityWarn
			f.Remediation = g.Remediation
		}
		return f
	}
	f.Severity = erdma.SeverityFail
	if g.DMABUF.Supported == SupportUnknown {
		// DMA-BUF may work: what decides it was not all seen.
		f.Severity = erdma.SeverityWarn
	}
	f.Summary = "GPUDirect RDMA not ready: " + g.Missing
	f.Remediation = g.Remediation
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
	worst := LinkSelf
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
	if len(far) == 0 {
		f.Summary = fmt.Sprintf("every GPU's nearest eRDMA device is at most %s: NCCL uses GPUDirect RDMA by default", worst)
		return f
	}
	f.Summary = fmt.Sprintf("nearest eRDMA device is up to %s away (%s): %s", worst, strings.Join(far, ","), worst.NCCLMeaning())
	if r.GDR.Ready {
		f.Remediation = fmt.Sprintf("to use GPUDirect RDMA over eRDMA: export NCCL_NET_GDR_LEVEL=%s", worst)
	} else {
		f.Remediation = fmt.Sprintf("load nvidia_peermem first (see %s), then export NCCL_NET_GDR_LEVEL=%s", FindingGDRPeermem, worst)
	}
	return f
}

package doctor

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
)

// TopologyReport is `erdmakit topo` as one value: NVML's view of the host's
// GPUs placed against its RDMA devices, nvidia-smi's matrix compared where
// one was given, and the verdict.
type TopologyReport struct {
	// GPUs is nvml.Inspect's report; its Topology is nil where there are no
	// GPUs to place.
	GPUs *nvml.Report
	// Comparison is nil where nothing was compared (or NVML is unusable).
	Comparison *nvml.Comparison
	Findings   []health.Finding // TopologyFindings
	Status     health.Severity  // their worst: ok, warn or fail
	// Notes say what could not be read (erdma.ReadDevices) and which
	// devices the GPUs were placed against where no eRDMA device was found
	// (NICsOf).
	Notes []string
}

// Topology reads the host's GPUs through NVML (nvml.ForRoot: a recorded
// host replays its snapshot), places them in the PCI tree against its
// eRDMA devices (NICsOf), compares nvidia-smi's matrix where theirs is not
// nil (nvml.Compare, from smitopo.Parse) and judges the result
// (TopologyFindings). NVML being unusable is a finding, not an error; the
// error is a host that cannot be read, or ctx's.
func Topology(ctx context.Context, h erdma.Host, theirs *nvml.Matrix) (*TopologyReport, error) {
	lib, err := nvml.ForRoot(ctx, h.Root())
	if err != nil {
		return nil, err
	}
	devs, notes, err := erdma.ReadDevices(ctx, h)
	if err != nil {
		return nil, err
	}
	nics, note := NICsOf(devs)
	if note != "" {
		notes = append(notes, note)
	}
	rep, err := nvml.Inspect(ctx, lib, h.Root(), nics)
	if err != nil {
		return nil, err
	}
	t := &TopologyReport{GPUs: rep, Notes: notes}
	if rep.Available && rep.Topology != nil && theirs != nil {
		c := nvml.Compare(&rep.Topology.Matrix, theirs)
		t.Comparison = &c
	}
	t.Findings = TopologyFindings(rep, t.Comparison)
	t.Status = health.Status(t.Findings)
	return t, nil
}

// The IDs of TopologyFindings.
const (
	FindingTopoNVML       = "topo-nvml"
	FindingTopoNvidiaSMI  = "topo-nvidia-smi"
	maxTopologyDifference = 32 // differences listed as evidence; the rest counted
)

// TopologyFindings judges the GPU<->NIC matrix as `erdmakit topo` shows it,
// so that an importer who reads the matrix gets the CLI's verdict and exit
// code (health.Status(findings).Exit()):
//   - topo-nvml: fail where NVML cannot be used (no GPU can be placed), with
//     NVML's reason and fix; then it is the only finding.
//   - gpu-nic-distance: the doctor's own check, word for word (warn where
//     the PCI tree did not place some devices; ok, with the
//     NCCL_NET_GDR_LEVEL to export, where the nearest device is beyond
//     NCCL's default level).
//   - topo-nvidia-smi, only where nvidia-smi's matrix was compared (cmp not
//     nil, from nvml.Compare): warn on each cell both list and disagree on.
//     Endpoints only one side lists are not differences (nvidia-smi lists
//     every NIC, the matrix only eRDMA devices).
func TopologyFindings(rep *nvml.Report, cmp *nvml.Comparison) []health.Finding {
	if !rep.Available {
		return []health.Finding{{ID: FindingTopoNVML, Severity: health.Fail,
			Summary:     "NVML unavailable: " + rep.Reason + ": no GPU can be placed",
			Evidence:    nonEmpty(rep.Error),
			Remediation: rep.Remediation}}
	}
	out := []health.Finding{gpuDistanceFinding(rep)}
	if cmp == nil {
		return out
	}
	smi := health.Finding{ID: FindingTopoNvidiaSMI, Severity: health.OK, Evidence: []string{},
		Summary: "nvidia-smi agrees on every GPU<->NIC and GPU<->GPU PCIe cell both list"}
	if n := len(cmp.Differences); n > 0 {
		smi.Severity = health.Warn
		smi.Summary = fmt.Sprintf("nvidia-smi disagrees with the PCI tree on %d cell(s)", n)
		for i, d := range cmp.Differences {
			if i == maxTopologyDifference {
				smi.Evidence = append(smi.Evidence, fmt.Sprintf("... and %d more", n-i))
				break
			}
			smi.Evidence = append(smi.Evidence, fmt.Sprintf("%s <-> %s: sysfs %s, nvidia-smi %s", d.A, d.B, d.Ours, d.Their))
		}
		smi.Remediation = "compare output taken on this host now (`nvidia-smi topo -m > f; erdmakit topo --compare f`): " +
			"another host's matrix, or one from before a device was added or moved, differs by nature; " +
			"if it still differs, report it with `erdmakit record`'s archive and the nvidia-smi output"
	}
	if len(cmp.OnlyTheirs) > 0 {
		smi.Evidence = append(smi.Evidence, fmt.Sprintf("only nvidia-smi lists %v (the matrix holds eRDMA devices only)", cmp.OnlyTheirs))
	}
	if len(cmp.OnlyOurs) > 0 {
		smi.Evidence = append(smi.Evidence, fmt.Sprintf("only the PCI tree lists %v", cmp.OnlyOurs))
	}
	return append(out, smi)
}

// nonEmpty is []string{s}, or empty where s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return []string{}
	}
	return []string{s}
}

package erdma

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// GDRLevel is the one answer to "which NCCL_NET_GDR_LEVEL does this host
// need so that NCCL uses GPUDirect RDMA over its eRDMA devices". The
// doctor's findings, nccl.AdviseEnv (`erdmakit nccl env`) and the docs all
// take it from DecideGDRLevel.
type GDRLevel struct {
	// Level is the value to export, one of NCCL's path types ("PHB" or
	// "SYS", smitopo.NCCLPathTypes()); "" when NCCL's default level
	// (smitopo.DefaultGDRLevel: PXB, or P2C from NCCL 2.29.2, which take
	// the same links on a PCIe host) already covers every GPU.
	Level string `json:"level,omitempty"`
	// Measured is true when Level comes from the GPU<->eRDMA distances;
	// false when they are unknown and Level is the SYS fallback.
	Measured bool `json:"measured"`
	// Distance is the farthest GPU<->eRDMA distance beyond PXB in
	// nvidia-smi's words ("NODE"), "" when none or not measured.
	Distance string `json:"distance,omitempty"`
	// Far lists the GPU-device pairs beyond PXB ("GPU0-erdma_0").
	Far []string `json:"far,omitempty"`
	// Reason says why, in a sentence.
	Reason string `json:"reason"`
}

// ncclDefaultGDRLevel is the farthest PCIe path NCCL's default
// NCCL_NET_GDR_LEVEL takes on an eRDMA host, whichever the version:
// PXB before 2.29.2; from 2.29.2 P2C (smitopo.DefaultGDRLevel), which adds
// only PHB paths to a CPU over C2C, absent from PCIe hosts.
const ncclDefaultGDRLevel = "PXB"

// ncclRank orders NCCL's path types for a GPU<->NIC path, nearest first
// (PATH_PIX 4, PATH_PXB 5, PATH_PHB 8, PATH_SYS 9 in src/include/graph.h).
func ncclRank(p string) int {
	switch p {
	case "LOC":
		return 0
	case "NVL":
		return 1
	case "PIX":
		return 4
	case "PXB":
		return 5
	case "PHB":
		return 8
	}
	return 9
}

// DecideGDRLevel decides the level from the GPU facts. With GPUs placed
// (g.Nearest, in nvidia-smi's words), the level is the farthest GPU's path
// to its nearest eRDMA device in NCCL's words (smitopo.Link.NCCLPath:
// nvidia-smi's NODE is NCCL's PHB, SYS stays SYS) when that is beyond PXB,
// else "" (NCCL's default suffices). With no GPU facts or no placed GPU, the
// level is SYS, not measured: on eRDMA GPU instances the ERIs hang off the
// root complex, and SYS allows every distance, so it is never too tight.
func DecideGDRLevel(g *GPUInfo) GDRLevel {
	if g == nil || !g.Available || len(g.Nearest) == 0 {
		why := "no GPU facts"
		switch {
		case g != nil && !g.Available && g.Reason != "":
			why = g.Reason
		case g != nil && g.Available:
			why = "no GPU placed relative to an eRDMA device"
		}
		return GDRLevel{Level: "SYS", Reason: "the GPU<->eRDMA distance was not measured (" + why +
			"); SYS allows GPUDirect RDMA at any distance"}
	}
	worst, worstSMI := "", ""
	var far []string
	for _, n := range g.Nearest {
		smi := smitopo.Link(strings.ToUpper(strings.TrimSpace(n.Distance)))
		p := smi.NCCLPath()
		if ncclRank(p) <= ncclRank(ncclDefaultGDRLevel) {
			continue
		}
		far = append(far, fmt.Sprintf("GPU%d-%s", n.GPU, n.Device))
		if worst == "" || ncclRank(p) > ncclRank(worst) || (p == worst && smi.Rank() > smitopo.Link(worstSMI).Rank()) {
			worst, worstSMI = p, string(smi)
		}
	}
	if worst == "" {
		return GDRLevel{Measured: true, Reason: "every GPU's nearest eRDMA device is within " + smitopo.NCCLDefaultGDRText}
	}
	list := far
	if len(list) > 4 {
		list = append(list[:4:4], "...")
	}
	dist := worst
	if worstSMI != worst {
		dist = fmt.Sprintf("%s in nvidia-smi's words, %s in NCCL's", worstSMI, worst)
	}
	return GDRLevel{Level: worst, Measured: true, Distance: worstSMI, Far: far,
		Reason: fmt.Sprintf("the GPU<->eRDMA distance is up to %s (%s), beyond "+smitopo.NCCLDefaultGDRText+": "+
			"NCCL uses GPUDirect RDMA there only with NCCL_NET_GDR_LEVEL=%s", dist, strings.Join(list, ", "), worst)}
}

// WithGraph is the level when NCCL_GRAPH_FILE is exported: the graph file
// (nccl.MultiNICGraph) gives each channel the GPUs of both NUMA nodes and
// one NIC, so some GPU always crosses the SMP interconnect to its NIC and
// the level is SYS (as Alibaba's runbook sets it).
func (l GDRLevel) WithGraph() GDRLevel {
	if l.Level == "SYS" {
		return l
	}
	return GDRLevel{Level: "SYS", Measured: l.Measured, Distance: l.Distance, Far: l.Far,
		Reason: "the graph file (NCCL_GRAPH_FILE) puts the GPUs of both NUMA nodes on each eRDMA NIC: " +
			"NCCL uses GPUDirect RDMA across the NUMA nodes only with NCCL_NET_GDR_LEVEL=SYS"}
}

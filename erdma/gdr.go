package erdma

import (
	"fmt"
	"strings"
)

// GDRLevel is the one answer to "which NCCL_NET_GDR_LEVEL does this host
// need so that NCCL uses GPUDirect RDMA over its eRDMA devices". The
// doctor's findings, nccl.AdviseEnv (`erdmakit nccl env`) and the docs all
// take it from DecideGDRLevel.
type GDRLevel struct {
	// Level is the value to export ("PHB", "NODE" or "SYS"); "" when
	// NCCL's default level (PXB) already covers every GPU.
	Level string `json:"level,omitempty"`
	// Measured is true when Level comes from the GPU<->eRDMA distances;
	// false when they are unknown and Level is the SYS fallback.
	Measured bool `json:"measured"`
	// Far lists the GPU-device pairs beyond PXB ("GPU0-erdma_0").
	Far []string `json:"far,omitempty"`
	// Reason says why, in a sentence.
	Reason string `json:"reason"`
}

// ncclDefaultGDRLevel is NCCL's default NCCL_NET_GDR_LEVEL.
const ncclDefaultGDRLevel = "PXB"

// distanceRank orders nvidia-smi's distance words, nearest first. A word
// not listed ranks as SYS: an unknown path is treated as the farthest.
func distanceRank(d string) int {
	switch strings.ToUpper(strings.TrimSpace(d)) {
	case "X":
		return 0
	case "PIX":
		return 2
	case "PXB":
		return 3
	case "PHB":
		return 4
	case "NODE":
		return 5
	}
	if strings.HasPrefix(d, "NV") {
		return 1
	}
	return 6
}

// DecideGDRLevel decides the level from the GPU facts. With GPUs placed
// (g.Nearest), the level is the farthest GPU's distance to its nearest eRDMA
// device when that is beyond PXB, else "" (NCCL's default suffices). With
// no GPU facts or no placed GPU, the level is SYS, not measured: on eRDMA
// GPU instances the ERIs hang off the root complex, and SYS allows every
// distance, so it is never too tight.
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
	worst := ""
	var far []string
	for _, n := range g.Nearest {
		r := distanceRank(n.Distance)
		if r <= distanceRank(ncclDefaultGDRLevel) {
			continue
		}
		far = append(far, fmt.Sprintf("GPU%d-%s", n.GPU, n.Device))
		if worst == "" || r > distanceRank(worst) {
			worst = strings.ToUpper(n.Distance)
		}
	}
	if worst == "" {
		return GDRLevel{Measured: true, Reason: "every GPU's nearest eRDMA device is within NCCL's default GDR level (PXB)"}
	}
	if distanceRank(worst) >= 6 {
		worst = "SYS" // SOC and unknown words
	}
	list := far
	if len(list) > 4 {
		list = append(list[:4:4], "...")
	}
	return GDRLevel{Level: worst, Measured: true, Far: far,
		Reason: fmt.Sprintf("the GPU<->eRDMA distance is up to %s (%s), beyond NCCL's default GDR level (PXB): "+
			"NCCL uses GPUDirect RDMA there only with NCCL_NET_GDR_LEVEL=%s", worst, strings.Join(list, ", "), worst)}
}

package smitopo

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/ncclver"
	"github.com/erdmakit/erdmakit/internal/render/table"
)

// Link is one cell of an nvidia-smi topo -m matrix: how two devices are
// connected.
type Link string

// The connection types, nearest first, with nvidia-smi's legend.
const (
	LinkSelf Link = "X"    // Self
	LinkPIX  Link = "PIX"  // at most a single PCIe bridge
	LinkPXB  Link = "PXB"  // multiple PCIe bridges, no host bridge
	LinkPHB  Link = "PHB"  // a PCIe host bridge (typically the CPU)
	LinkNODE Link = "NODE" // PCIe and the interconnect between host bridges within a NUMA node
	LinkSYS  Link = "SYS"  // PCIe and the SMP interconnect between NUMA nodes (QPI/UPI)
)

// Legend is nvidia-smi topo -m's legend, word for word.
const Legend = `  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
`

// Rank orders links nearest first: X 0, NV# 1, PIX 2, PXB 3, PHB 4,
// NODE 5, SYS 6 (and the old nvidia-smi word SOC, which meant SYS);
// unknown words rank 7.
func (l Link) Rank() int {
	switch l {
	case LinkSelf:
		return 0
	case LinkPIX:
		return 2
	case LinkPXB:
		return 3
	case LinkPHB:
		return 4
	case LinkNODE:
		return 5
	case LinkSYS, "SOC":
		return 6
	}
	if l.NVLinks() > 0 {
		return 1
	}
	return 7
}

// NVLinks is # for an "NV#" link, 0 otherwise.
func (l Link) NVLinks() int {
	s, ok := strings.CutPrefix(string(l), "NV")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// NCCLDefaultGDRLevel is the farthest link in nvidia-smi's words at which
// NCCL uses GPUDirect RDMA by default: PXB. NCCL's own default level is PXB
// before 2.29.2 and P2C from 2.29.2 while NCCL_NET_GDR_C2C=1 (its default
// since 2.27.3); see DefaultGDRLevel. P2C is a PHB path through a CPU
// reached over C2C (Grace): nvidia-smi has no word for it, and on a PCIe
// host (every eRDMA GPU instance) both defaults take PIX and PXB and leave
// PHB (NODE) and SYS out.
const NCCLDefaultGDRLevel = LinkPXB

// GDRC2CMinNCCL is the first NCCL whose default GDR level is P2C (while
// NCCL_NET_GDR_C2C=1): netGdrLevel = ncclParamNetGdrC2c() ? PATH_P2C :
// PATH_PXB in ncclTopoCheckGdr (src/graph/paths.cc at NVIDIA/nccl 5067397,
// line 511; NCCL v2.29.2-1, ebd1e929). Before, the default was PATH_PXB.
const GDRC2CMinNCCL = "2.29.2"

// NCCLDefaultGDRText names NCCL's default GDR level for every version, for
// sentences: the advice does not depend on which, on eRDMA hosts.
const NCCLDefaultGDRText = "NCCL's default GDR level (PXB; P2C from NCCL " + GDRC2CMinNCCL + " with NCCL_NET_GDR_C2C=1, the same on a PCIe host)"

// DefaultGDRLevel is NCCL version's default NCCL_NET_GDR_LEVEL in NCCL's
// words: "P2C" from 2.29.2 unless NCCL_NET_GDR_C2C=0 (c2c false), "PXB"
// before (NCCL_PARAM(NetGdrC2c, "NET_GDR_C2C", 1), src/graph/paths.cc line
// 465; 0 before 2.27.3, when it only widened PHB paths over C2C). An
// unknown version ("") is taken as current.
func DefaultGDRLevel(version string, c2c bool) string {
	if c2c && (version == "" || !ncclver.Less(version, GDRC2CMinNCCL)) {
		return "P2C"
	}
	return "PXB"
}

// NCCLPathTypes are the words NCCL accepts in NCCL_NET_GDR_LEVEL (and
// NCCL_P2P_LEVEL), nearest first: src/graph/topo.cc topoPathTypeStr up to
// PATH_SYS (src/include/graph.h), matched by ncclGetLevel in
// src/graph/paths.cc. Any other word (nvidia-smi's NODE among them) is
// ignored there and NCCL keeps its default level (DefaultGDRLevel). The slice is the
// caller's.
func NCCLPathTypes() []string {
	return []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}
}

// NCCLPath translates nvidia-smi's word for a GPU<->NIC link into NCCL's
// path type, the word NCCL_NET_GDR_LEVEL takes. The words differ where
// nvidia-smi splits what NCCL lumps: nvidia-smi's NODE (host bridges within
// one NUMA node) is a path through one CPU node in NCCL's topology, PATH_PHB;
// across NUMA nodes (SYS, or the old SOC) it is PATH_SYS. X is PATH_LOC and
// NV# PATH_NVL. An unknown word is SYS: the farthest, never too tight.
func (l Link) NCCLPath() string {
	switch {
	case l == LinkSelf:
		return "LOC"
	case l.NVLinks() > 0:
		return "NVL"
	case l == LinkPIX, l == LinkPXB, l == LinkPHB:
		return string(l)
	case l == LinkNODE:
		return "PHB"
	}
	return "SYS"
}

// GDRByDefault reports whether NCCL uses GPUDirect RDMA across l at its
// default level (when GDR is ready at all).
func (l Link) GDRByDefault() bool {
	r := l.Rank()
	return r >= 2 && r <= NCCLDefaultGDRLevel.Rank()
}

// NCCLMeaning says what the GPU<->NIC distance l means for NCCL, with the
// level in NCCL's words (NCCLPath).
func (l Link) NCCLMeaning() string {
	switch {
	case l.GDRByDefault():
		return fmt.Sprintf("%s is within "+NCCLDefaultGDRText+": NCCL uses GPUDirect RDMA when it is ready", l)
	case l == LinkPHB, l == LinkNODE, l == LinkSYS, l == "SOC":
		name := string(l)
		if p := l.NCCLPath(); p != name {
			name = fmt.Sprintf("%s (NCCL's %s)", l, p)
		}
		return fmt.Sprintf("%s is beyond "+NCCLDefaultGDRText+": GPUDirect RDMA is off unless NCCL_NET_GDR_LEVEL=%s (or a farther level)", name, l.NCCLPath())
	}
	return fmt.Sprintf("%q: no NCCL meaning known", string(l))
}

// Endpoint is a row (and column) of a Matrix.
type Endpoint struct {
	// Label is the matrix's name for it: "GPU0", "NIC1" (or "mlx5_0" in old
	// nvidia-smi output without a NIC legend).
	Label string `json:"label"`
	// Name is the NIC legend's device name ("erdma_0") or the GPU model.
	Name       string `json:"name,omitempty"`
	PCIAddress string `json:"pci_address,omitempty"`
	// CPUAffinity, NUMAAffinity and GPUNUMAID are the trailing columns
	// ("0-47,96-143", "0", "N/A"); empty where nvidia-smi leaves them empty.
	CPUAffinity  string `json:"cpu_affinity,omitempty"`
	NUMAAffinity string `json:"numa_affinity,omitempty"`
	GPUNUMAID    string `json:"gpu_numa_id,omitempty"`
}

// IsGPU reports whether the endpoint is a GPU ("GPU<n>").
func (e Endpoint) IsGPU() bool {
	s, ok := strings.CutPrefix(e.Label, "GPU")
	if !ok || s == "" {
		return false
	}
	_, err := strconv.Atoi(s)
	return err == nil
}

// Matrix is an nvidia-smi topo -m style matrix: Links[i][j] connects
// Endpoints[i] and Endpoints[j]. It is produced from sysfs
// (nvml.ComputeTopology) or from nvidia-smi output (Parse), so the two can
// be compared cell by cell.
type Matrix struct {
	// Source is "sysfs" (computed by erdmakit) or "nvidia-smi" (parsed).
	Source    string     `json:"source"`
	Endpoints []Endpoint `json:"endpoints"`
	Links     [][]Link   `json:"links"`
	// AffinityColumns are the trailing column titles as printed
	// ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID").
	AffinityColumns []string `json:"affinity_columns,omitempty"`
}

// Index returns the position of the endpoint with this label or NIC name.
func (m *Matrix) Index(labelOrName string) int {
	for i, e := range m.Endpoints {
		if e.Label == labelOrName {
			return i
		}
	}
	for i, e := range m.Endpoints {
		if e.Name != "" && e.Name == labelOrName && !e.IsGPU() {
			return i
		}
	}
	return -1
}

// Link returns the connection between two endpoints named by label (or NIC
// legend name).
func (m *Matrix) Link(a, b string) (Link, bool) {
	i, j := m.Index(a), m.Index(b)
	if i < 0 || j < 0 || i >= len(m.Links) || j >= len(m.Links[i]) {
		return "", false
	}
	return m.Links[i][j], true
}

// WriteText prints the matrix as nvidia-smi topo -m does: the matrix,
// the legend and the NIC legend.
func (m *Matrix) WriteText(w io.Writer) error {
	header := []string{""}
	for _, e := range m.Endpoints {
		header = append(header, e.Label)
	}
	cols := m.AffinityColumns
	header = append(header, cols...)
	t := table.New(header...)
	for i, e := range m.Endpoints {
		row := []string{e.Label}
		for j := range m.Endpoints {
			var l Link
			if i < len(m.Links) && j < len(m.Links[i]) {
				l = m.Links[i][j]
			}
			if l == "" {
				l = "?"
			}
			row = append(row, string(l))
		}
		for _, c := range cols {
			row = append(row, e.affinity(c))
		}
		t.Add(row...)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("\nLegend:\n\n")
	b.WriteString(Legend)
	var nics []string
	for _, e := range m.Endpoints {
		if !e.IsGPU() && e.Name != "" {
			nics = append(nics, fmt.Sprintf("  %s: %s\n", e.Label, e.Name))
		}
	}
	if len(nics) > 0 {
		b.WriteString("\nNIC Legend:\n\n")
		b.WriteString(strings.Join(nics, ""))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (e Endpoint) affinity(col string) string {
	switch col {
	case "CPU Affinity":
		return e.CPUAffinity
	case "NUMA Affinity":
		return e.NUMAAffinity
	case "GPU NUMA ID":
		return e.GPUNUMAID
	}
	return ""
}

// Nearest is one GPU's nearest NIC and what the distance means for NCCL.
type Nearest struct {
	GPU        int    `json:"gpu"`
	GPUAddress string `json:"gpu_pci_address"`
	NIC        string `json:"nic"`
	NICAddress string `json:"nic_pci_address"`
	Distance   Link   `json:"distance"`
	// GDRByDefault: NCCL uses GPUDirect RDMA at its default level.
	GDRByDefault bool   `json:"gdr_by_default"`
	NCCL         string `json:"nccl"`
}

// Nearest is, for every GPU row, the NIC with the lowest rank (the first
// in column order wins a tie). Cells left empty (devices not placed) are
// skipped.
func (m *Matrix) Nearest() []Nearest {
	out := []Nearest{}
	for i, g := range m.Endpoints {
		if !g.IsGPU() || i >= len(m.Links) {
			continue
		}
		best := -1
		for j, n := range m.Endpoints {
			if n.IsGPU() || j >= len(m.Links[i]) {
				continue
			}
			l := m.Links[i][j]
			if l == "" {
				continue
			}
			if best < 0 || l.Rank() < m.Links[i][best].Rank() {
				best = j
			}
		}
		if best < 0 {
			continue
		}
		n := m.Endpoints[best]
		name := n.Name
		if name == "" {
			name = n.Label
		}
		idx, _ := strconv.Atoi(strings.TrimPrefix(g.Label, "GPU"))
		l := m.Links[i][best]
		out = append(out, Nearest{GPU: idx, GPUAddress: g.PCIAddress, NIC: name, NICAddress: n.PCIAddress,
			Distance: l, GDRByDefault: l.GDRByDefault(), NCCL: l.NCCLMeaning()})
	}
	return out
}

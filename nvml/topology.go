package nvml

import (
	"context"
	"fmt"
	"strconv"

	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// NIC is a network device whose distance to the GPUs is wanted: the caller
// maps its own inventory (eRDMA devices) to these.
type NIC struct {
	Name       string `json:"name"`        // "erdma_0"
	PCIAddress string `json:"pci_address"` // "0000:00:05.0"
}

// Topology is the GPU<->NIC picture computed from the host's PCI tree.
type Topology struct {
	Matrix  Matrix    `json:"matrix"`
	Nearest []Nearest `json:"nearest"`
	// Errors name devices whose place in the PCI tree could not be read;
	// their cells are empty.
	Errors []string `json:"errors,omitempty"`
}

// ComputeTopology builds the GPU<->NIC matrix from the PCI tree under
// root (nvidia-smi's rules: same device X; one switch PIX; several PXB;
// same host bridge PHB; different host bridges on one NUMA node NODE;
// across NUMA nodes SYS) and each GPU's nearest NIC. GPU<->GPU cells are
// PCIe distances: NVLink is not evaluated. When ctx ends the reads give
// up: the devices not read are in Errors, each naming the file it was
// reading.
func ComputeTopology(ctx context.Context, root string, gpus []GPU, nics []NIC) *Topology {
	t := &Topology{Matrix: Matrix{Source: "sysfs", AffinityColumns: []string{"CPU Affinity", "NUMA Affinity"}}}
	paths := make([]*PCIPath, 0, len(gpus)+len(nics))
	add := func(e Endpoint) {
		var pp *PCIPath
		if e.PCIAddress == "" {
			t.Errors = append(t.Errors, e.Label+": no PCI address")
		} else if p, err := ReadPCIPath(ctx, root, e.PCIAddress); err != nil {
			t.Errors = append(t.Errors, fmt.Sprintf("%s (%s): %v", e.Label, e.Name, err))
		} else {
			pp = &p
			if e.IsGPU() {
				e.CPUAffinity = p.CPUList
				e.NUMAAffinity = "N/A"
				if p.NUMANode >= 0 {
					e.NUMAAffinity = strconv.Itoa(p.NUMANode)
				}
			}
		}
		t.Matrix.Endpoints = append(t.Matrix.Endpoints, e)
		paths = append(paths, pp)
	}
	for _, g := range gpus {
		add(Endpoint{Label: fmt.Sprintf("GPU%d", g.Index), Name: g.Name, PCIAddress: g.PCIAddress})
	}
	for i, n := range nics {
		add(Endpoint{Label: fmt.Sprintf("NIC%d", i), Name: n.Name, PCIAddress: n.PCIAddress})
	}
	single := numaNodes(ctx, root) <= 1
	t.Matrix.Links = make([][]Link, len(paths))
	for i := range paths {
		t.Matrix.Links[i] = make([]Link, len(paths))
		for j := range paths {
			if paths[i] != nil && paths[j] != nil {
				t.Matrix.Links[i][j] = Distance(*paths[i], *paths[j], single)
			}
		}
	}
	t.Nearest = t.Matrix.Nearest()
	return t
}

// Distance is nvidia-smi's word for the PCIe path between a and b.
// singleNUMA says the host has at most one NUMA node, so two devices
// whose numa_node is unknown (-1) are on the same one.
func Distance(a, b PCIPath, singleNUMA bool) Link {
	if a.Address == b.Address {
		return smitopo.LinkSelf
	}
	if a.HostBridge != b.HostBridge {
		same := a.NUMANode == b.NUMANode && (a.NUMANode >= 0 || singleNUMA)
		if same {
			return smitopo.LinkNODE
		}
		return smitopo.LinkSYS
	}
	sa, sb := a.switches(), b.switches()
	c := 0
	for c < len(sa) && c < len(sb) && sa[c] == sb[c] {
		c++
	}
	if c == 0 {
		return smitopo.LinkPHB
	}
	if (len(sa)-c)+(len(sb)-c)+1 == 1 {
		return smitopo.LinkPIX
	}
	return smitopo.LinkPXB
}

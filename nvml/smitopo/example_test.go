package smitopo_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

func ExampleParse() {
	out := "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n" +
		"GPU0\t X \tNV8\tSYS\t0-31\t0\n" +
		"GPU1\tNV8\t X \tPIX\t32-63\t1\n" +
		"NIC0\tSYS\tPIX\t X \t\t\n" +
		"\nNIC Legend:\n\n  NIC0: erdma_0\n"
	m, err := smitopo.Parse(context.Background(), strings.NewReader(out))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range m.Nearest() {
		fmt.Printf("GPU%d -> %s %s: %s\n", n.GPU, n.NIC, n.Distance, n.NCCL)
	}
	// Output:
	// GPU0 -> erdma_0 SYS: SYS is beyond NCCL's default GDR level (PXB; P2C from NCCL 2.29.2 with NCCL_NET_GDR_C2C=1, the same on a PCIe host): GPUDirect RDMA is off unless NCCL_NET_GDR_LEVEL=SYS (or a farther level)
	// GPU1 -> erdma_0 PIX: PIX is within NCCL's default GDR level (PXB; P2C from NCCL 2.29.2 with NCCL_NET_GDR_C2C=1, the same on a PCIe host): NCCL uses GPUDirect RDMA when it is ready
}

// nvidia-smi's words are not NCCL's: what NCCL_NET_GDR_LEVEL takes is the
// translation.
func ExampleLink_NCCLPath() {
	for _, l := range []smitopo.Link{"PIX", "PHB", "NODE", "SYS"} {
		fmt.Printf("%s -> NCCL_NET_GDR_LEVEL=%s\n", l, l.NCCLPath())
	}
	// Output:
	// PIX -> NCCL_NET_GDR_LEVEL=PIX
	// PHB -> NCCL_NET_GDR_LEVEL=PHB
	// NODE -> NCCL_NET_GDR_LEVEL=PHB
	// SYS -> NCCL_NET_GDR_LEVEL=SYS
}

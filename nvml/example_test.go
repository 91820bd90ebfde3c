package nvml_test

import (
	"context"
	"fmt"
	"os"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml"
)

func ExampleNormalizeBusID() {
	bdf, _ := nvml.NormalizeBusID("00000000:1A:00.0") // as NVML reports it
	fmt.Println(bdf)
	// Output: 0000:1a:00.0
}

// Replay a recorded host's GPUs, GPUDirect RDMA readiness and topology:
// the same code a live host runs, with NVML answered from
// <root>/erdmakit/nvml.json. erdma.OpenHost unpacks the recording.
func ExampleInspect() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	root := h.Root()
	lib, err := nvml.ForRoot(context.Background(), root)
	if err != nil {
		fmt.Println(err)
		return
	}
	nics := []nvml.NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}, {Name: "erdma_1", PCIAddress: "0000:80:05.0"}}
	rep, err := nvml.Inspect(context.Background(), lib, root, nics)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(rep.GPUs.GPUs), "GPUs, driver", rep.GPUs.DriverVersion, "CUDA", rep.GPUs.CUDAVersion)
	fmt.Println("GPUDirect RDMA via", rep.GDR.Path)
	for _, n := range rep.Topology.Nearest[3:5] {
		fmt.Printf("GPU%d -> %s %s\n", n.GPU, n.NIC, n.Distance)
	}
	// Output:
	// 8 GPUs, driver 535.161.08 CUDA 12.2
	// GPUDirect RDMA via nvidia_peermem
	// GPU3 -> erdma_0 NODE
	// GPU4 -> erdma_1 NODE
}

func ExampleReadGDR() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/no-peermem.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	g := nvml.ReadGDR(context.Background(), h.Root(), "535.161.08")
	fmt.Println("ready:", g.Ready)
	fmt.Printf("peermem: %q\n", g.Peermem)
	fmt.Println("DMA-BUF:", g.DMABUF.Supported, g.DMABUF.Missing[0])
	// Output:
	// ready: false
	// peermem: ""
	// DMA-BUF: no kernel 5.10.134-16.3.al8.x86_64 predates 5.12 (RDMA dma-buf registration)
}

// Record this host's NVML for a recorded host tree (what `erdmakit record`
// stores as erdmakit/nvml.json). Without a driver the failure is recorded.
func ExampleCapture() {
	s, err := nvml.Capture(context.Background(), nvml.Live(), "captured by erdmakit record")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Write(os.Stdout)
}

// Whether rdma-core's provider for a kernel driver registers dma-bufs: eRDMA's
// does not, so GPUDirect RDMA there needs nvidia_peermem.
func ExampleProviderDMABUF() {
	for _, driver := range []string{"erdma", "mlx5_core", "virtio_net"} {
		provider, s, _ := nvml.ProviderDMABUF(driver)
		fmt.Printf("%s: provider %q, DMA-BUF %s\n", driver, provider, s)
	}
	// Output:
	// erdma: provider "erdma", DMA-BUF no
	// mlx5_core: provider "mlx5", DMA-BUF yes
	// virtio_net: provider "", DMA-BUF unknown
}

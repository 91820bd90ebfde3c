package gpugen

import (
	"fmt"

	"github.com/erdmakit/erdmakit/nvml"
)

// The made-up machine: 8 H20-like GPUs, two per PCIe switch, each switch on
// its own root complex; root complexes pci0000:16 and pci0000:38 on NUMA
// node 0, pci0000:9a and pci0000:b8 on NUMA node 1 (the layout of a
// two-socket 8-GPU server). With internal/hostgen's eRDMA functions on
// pci0000:00 (NUMA 0) and pci0000:80 (NUMA 1) every GPU's nearest eRDMA
// device is NODE and the other one SYS: both beyond NCCL's default GDR
// level (PXB), which is why NCCL needs NCCL_NET_GDR_LEVEL to use GPUDirect
// RDMA on eRDMA hosts. Values are modelled, not captured from a real host.

const (
	h20Name     = "NVIDIA H20"
	h20DeviceID = "0x2329"
	h20Memory   = 97871 * 1024 * 1024 // 97871 MiB, as nvidia-smi shows an H20
	l20Name     = "NVIDIA L20"
	l20DeviceID = "0x26ba"
	l20Memory   = 46068 * 1024 * 1024
	driver535   = "535.161.08"
	cuda122     = 12020
)

// cpulists of ecs.ebmgn8is.32xlarge's 128 vCPUs over two NUMA nodes.
func ebmgn8isNodes() map[int]string {
	return map[int]string{0: "0-31,64-95", 1: "32-63,96-127"}
}

// switchGPUs is two GPUs behind one PCIe switch on host bridge bus hb:
// root port hb:01.0, switch upstream port (hb+1):00.0, downstream ports
// (hb+2):00.0 and (hb+2):01.0, GPUs on (hb+3):00.0 and (hb+4):00.0.
func switchGPUs(hb, numa int) []GPU {
	bdf := func(bus, dev int) string { return fmt.Sprintf("0000:%02x:%02x.0", bus, dev) }
	base := []string{bdf(hb, 1), bdf(hb+1, 0)}
	return []GPU{
		{HostBridge: fmt.Sprintf("pci0000:%02x", hb), Bridges: append(append([]string{}, base...), bdf(hb+2, 0)), PCI: bdf(hb+3, 0), NUMA: numa, DeviceID: h20DeviceID},
		{HostBridge: fmt.Sprintf("pci0000:%02x", hb), Bridges: append(append([]string{}, base...), bdf(hb+2, 1)), PCI: bdf(hb+4, 0), NUMA: numa, DeviceID: h20DeviceID},
	}
}

// EightH20 is the GPU side of an ecs.ebmgn8is.32xlarge.
func EightH20(host string) Spec {
	var gpus []GPU
	for _, rc := range []struct{ bus, numa int }{{0x16, 0}, {0x38, 0}, {0x9a, 1}, {0xb8, 1}} {
		gpus = append(gpus, switchGPUs(rc.bus, rc.numa)...)
	}
	return Spec{Host: host, GPUs: gpus, Nodes: ebmgn8isNodes(), Snapshot: snapshotOf(gpus, true)}
}

// snapshotOf is the NVML view of gpus; withNUMA false records NVML
// without nvmlDeviceGetNumaNodeId (readers fall back to sysfs).
func snapshotOf(gpus []GPU, withNUMA bool) nvml.Snapshot {
	s := nvml.Snapshot{Schema: nvml.SnapshotSchema, Init: "SUCCESS",
		Note:          "made by nvml/internal/gpugen (modelled on an 8x H20 host, not captured)",
		DriverVersion: driver535, CUDADriverVersion: cuda122}
	for i, g := range gpus {
		var numa *int
		if withNUMA {
			n := g.NUMA
			numa = &n
		}
		s.GPUs = append(s.GPUs, nvml.SnapshotGPU{
			Name: h20Name,
			UUID: fmt.Sprintf("GPU-e7d3a1c2-0b5f-4c1e-9a7d-%012x", 0x8000+i),
			// NVML's form: 8-digit domain, upper-case hex.
			PCIBusID:    fmt.Sprintf("0000%s", upper(g.PCI)),
			NUMANode:    numa,
			MemoryTotal: h20Memory,
		})
	}
	return s
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TwoL20VM is the GPU side of an ecs.gn8is-2x.8xlarge virtual machine: two
// L20-like GPUs passed through onto the VM's single root bus pci0000:00
// (no bridges), one NUMA node, NVML without nvmlDeviceGetNumaNodeId (the
// NUMA node comes from sysfs). Next to internal/hostgen's erdma_0 at
// 0000:00:05.0 every GPU is PHB from it.
func TwoL20VM(host string) Spec {
	gpus := []GPU{
		{HostBridge: "pci0000:00", PCI: "0000:00:07.0", NUMA: 0, DeviceID: l20DeviceID},
		{HostBridge: "pci0000:00", PCI: "0000:00:08.0", NUMA: 0, DeviceID: l20DeviceID},
	}
	s := snapshotOf(gpus, false)
	s.Note = "made by nvml/internal/gpugen (modelled on a 2x L20 VM, not captured)"
	for i := range s.GPUs {
		s.GPUs[i].Name, s.GPUs[i].MemoryTotal = l20Name, l20Memory
	}
	return Spec{Host: host, GPUs: gpus, Nodes: map[int]string{0: "0-31"}, Snapshot: s}
}

// Fixtures lists the trees that get GPUs: every host internal/hostgen
// writes. The ebmgn8is ones differ from the healthy host only in their
// eRDMA or module parts, so they share its 8 GPUs.
func Fixtures() []Spec {
	var out []Spec
	for _, h := range []string{"ebmgn8is-healthy", "iwarp-mode", "memlock-64k", "mtu-mismatch", "no-erdma-driver", "no-peermem", "port-down-no-ip"} {
		out = append(out, EightH20(h))
	}
	return append(out, TwoL20VM("gn8is-single"))
}

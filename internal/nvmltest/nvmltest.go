// Package nvmltest gives tests an NVML without a GPU: go-nvml's mock set up
// as a host with one NVIDIA H20 on driver 535.161.08 (which bundles
// nvidia_peermem). Each NVML session (nvml.Inspect) is one Init, so a test
// counts sessions with the mock's InitCalls.
package nvmltest

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// OneGPU is a mock NVML with one GPU: name, UUID, 1 GiB of memory; PCI
// info, NVLink and NUMA not supported (so sysfs decides them).
func OneGPU() *mock.Interface {
	dev := &mock.Device{
		GetNameFunc:        func() (string, gonvml.Return) { return "NVIDIA H20", gonvml.SUCCESS },
		GetUUIDFunc:        func() (string, gonvml.Return) { return "GPU-0", gonvml.SUCCESS },
		GetPciInfoFunc:     func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, gonvml.ERROR_NOT_SUPPORTED },
		GetMemoryInfoFunc:  func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 1 << 30}, gonvml.SUCCESS },
		GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
		GetNumaNodeIdFunc:  func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
	}
	return &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ErrorStringFunc:                func(gonvml.Return) string { return "mock" },
		ExtensionsFunc:                 func() gonvml.ExtendedInterface { return nil },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "535.161.08", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 12020, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc:     func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS },
	}
}

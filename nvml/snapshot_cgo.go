//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Capture records a live (or any) NVML into a snapshot. An Init failure is
// recorded, not returned: a host without a working driver is worth
// recording too. Other NVML failures are errors.
func Capture(ctx context.Context, lib Library, note string) (*Snapshot, error) {
	s := &Snapshot{Schema: SnapshotSchema, Note: note, GPUs: []SnapshotGPU{}}
	r := lib.Init()
	s.Init = returnName(r)
	if r != gonvml.SUCCESS {
		return s, nil
	}
	defer lib.Shutdown()
	drv, r := lib.SystemGetDriverVersion()
	if r != gonvml.SUCCESS {
		return nil, nvmlError(lib, "nvmlSystemGetDriverVersion", r)
	}
	s.DriverVersion = drv
	if v, r := lib.SystemGetCudaDriverVersion(); r == gonvml.SUCCESS {
		s.CUDADriverVersion = v
	}
	err := eachDevice(ctx, lib, func(i int, dev gonvml.Device, has optionalCalls) error {
		var g SnapshotGPU
		if has.nvlink {
			g.NVLinks = nvLinks(dev)
		}
		g.Name, _ = dev.GetName()
		g.UUID, _ = dev.GetUUID()
		pci, r := dev.GetPciInfo()
		if r != gonvml.SUCCESS {
			return nvmlError(lib, fmt.Sprintf("nvmlDeviceGetPciInfo(%d)", i), r)
		}
		g.PCIBusID = cString(pci.BusId[:])
		if mem, r := dev.GetMemoryInfo(); r == gonvml.SUCCESS {
			g.MemoryTotal = mem.Total
		}
		if has.numa {
			if node, r := dev.GetNumaNodeId(); r == gonvml.SUCCESS {
				g.NUMANode = &node
			}
		}
		s.GPUs = append(s.GPUs, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Library returns a go-nvml mock that answers as the recorded NVML did.
// Every call ReadGPUs makes is answered; calls the snapshot cannot answer
// return ERROR_NOT_SUPPORTED instead of the mock's panic.
func (s *Snapshot) Library() *mock.Interface {
	initRet, ok := returnByName(s.Init)
	if !ok {
		initRet = gonvml.ERROR_UNKNOWN
	}
	devs := make([]*mock.Device, len(s.GPUs))
	for i, g := range s.GPUs {
		devs[i] = snapshotDevice(i, g)
	}
	numa, nvlink := true, true
	for _, g := range s.GPUs {
		if g.NUMANode == nil {
			numa = false
		}
		if g.NVLinks == nil {
			nvlink = false
		}
	}
	// initialised counts Init minus Shutdown, as the real library's
	// reference count does: calls outside it are ERROR_UNINITIALIZED.
	var initialised atomic.Int32
	ready := func() gonvml.Return {
		if initialised.Load() == 0 {
			return gonvml.ERROR_UNINITIALIZED
		}
		return gonvml.SUCCESS
	}
	ext := &mock.ExtendedInterface{
		LookupSymbolFunc: func(name string) error {
			if name == "nvmlDeviceGetNumaNodeId" && !numa {
				return errors.New("symbol nvmlDeviceGetNumaNodeId not recorded")
			}
			if name == "nvmlDeviceGetNvLinkState" && !nvlink {
				return errors.New("NVLink state not recorded")
			}
			return nil
		},
	}
	return &mock.Interface{
		InitFunc: func() gonvml.Return {
			if initRet == gonvml.SUCCESS {
				initialised.Add(1)
			}
			return initRet
		},
		ShutdownFunc: func() gonvml.Return {
			for {
				n := initialised.Load()
				if n == 0 {
					return gonvml.ERROR_UNINITIALIZED
				}
				if initialised.CompareAndSwap(n, n-1) {
					return gonvml.SUCCESS
				}
			}
		},
		ErrorStringFunc: func(r gonvml.Return) string {
			// A replayed failure explains itself with the snapshot's note
			// ("recorded host has no erdmakit/nvml.json").
			if r == initRet && r != gonvml.SUCCESS && s.Note != "" {
				return s.Note
			}
			return returnName(r)
		},
		ExtensionsFunc: func() gonvml.ExtendedInterface { return ext },
		SystemGetDriverVersionFunc: func() (string, gonvml.Return) {
			return s.DriverVersion, ready()
		},
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) {
			if r := ready(); r != gonvml.SUCCESS {
				return 0, r
			}
			if s.CUDADriverVersion == 0 {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return s.CUDADriverVersion, gonvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, gonvml.Return) {
			return len(devs), ready()
		},
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			if r := ready(); r != gonvml.SUCCESS {
				return nil, r
			}
			if i < 0 || i >= len(devs) {
				return nil, gonvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], gonvml.SUCCESS
		},
	}
}

func snapshotDevice(i int, g SnapshotGPU) *mock.Device {
	var pci gonvml.PciInfo
	for j := 0; j < len(g.PCIBusID) && j < len(pci.BusId)-1; j++ {
		pci.BusId[j] = int8(g.PCIBusID[j])
	}
	return &mock.Device{
		GetIndexFunc: func() (int, gonvml.Return) { return i, gonvml.SUCCESS },
		GetNameFunc:  func() (string, gonvml.Return) { return g.Name, gonvml.SUCCESS },
		GetUUIDFunc:  func() (string, gonvml.Return) { return g.UUID, gonvml.SUCCESS },
		GetPciInfoFunc: func() (gonvml.PciInfo, gonvml.Return) {
			return pci, gonvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: g.MemoryTotal, Free: g.MemoryTotal}, gonvml.SUCCESS
		},
		GetNumaNodeIdFunc: func() (int, gonvml.Return) {
			if g.NUMANode == nil {
				return 0, gonvml.ERROR_NOT_SUPPORTED
			}
			return *g.NUMANode, gonvml.SUCCESS
		},
		GetNvLinkStateFunc: func(link int) (gonvml.EnableState, gonvml.Return) {
			switch {
			case g.NVLinks == nil || *g.NVLinks == 0:
				return gonvml.FEATURE_DISABLED, gonvml.ERROR_NOT_SUPPORTED
			case link < *g.NVLinks:
				return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
			case link < maxNVLinks:
				return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
			}
			return gonvml.FEATURE_DISABLED, gonvml.ERROR_INVALID_ARGUMENT
		},
	}
}

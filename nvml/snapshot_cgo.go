//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
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

// Library returns an NVML that answers as the recorded one did: every call
// ReadGPUs and Capture make is answered from the snapshot (calls it cannot
// answer return ERROR_NOT_SUPPORTED). It is erdmakit's own small type, not
// go-nvml's mock package, which is not linked into importers' binaries.
func (s *Snapshot) Library() Library {
	initRet, ok := returnByName(s.Init)
	if !ok {
		initRet = gonvml.ERROR_UNKNOWN
	}
	r := &replay{s: s, initRet: initRet, numa: true, nvlink: true}
	r.devs = make([]*replayDevice, len(s.GPUs))
	for i, g := range s.GPUs {
		r.devs[i] = newReplayDevice(i, g)
		if g.NUMANode == nil {
			r.numa = false
		}
		if g.NVLinks == nil {
			r.nvlink = false
		}
	}
	return r
}

// replay is a recorded NVML.
type replay struct {
	s            *Snapshot
	initRet      gonvml.Return
	devs         []*replayDevice
	numa, nvlink bool // the optional entry points the recording has answers for
	// initialised counts Init minus Shutdown, as the real library's
	// reference count does: calls outside it are ERROR_UNINITIALIZED.
	initialised atomic.Int32
}

func (r *replay) ready() gonvml.Return {
	if r.initialised.Load() == 0 {
		return gonvml.ERROR_UNINITIALIZED
	}
	return gonvml.SUCCESS
}

func (r *replay) Init() gonvml.Return {
	if r.initRet == gonvml.SUCCESS {
		r.initialised.Add(1)
	}
	return r.initRet
}

func (r *replay) Shutdown() gonvml.Return {
	for {
		n := r.initialised.Load()
		if n == 0 {
			return gonvml.ERROR_UNINITIALIZED
		}
		if r.initialised.CompareAndSwap(n, n-1) {
			return gonvml.SUCCESS
		}
	}
}

// ErrorString explains a replayed Init failure with the snapshot's note
// ("recorded host has no erdmakit/nvml.json").
func (r *replay) ErrorString(ret gonvml.Return) string {
	if ret == r.initRet && ret != gonvml.SUCCESS && r.s.Note != "" {
		return r.s.Note
	}
	return returnName(ret)
}

func (r *replay) SystemGetDriverVersion() (string, gonvml.Return) {
	return r.s.DriverVersion, r.ready()
}

func (r *replay) SystemGetCudaDriverVersion() (int, gonvml.Return) {
	if ret := r.ready(); ret != gonvml.SUCCESS {
		return 0, ret
	}
	if r.s.CUDADriverVersion == 0 {
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	return r.s.CUDADriverVersion, gonvml.SUCCESS
}

func (r *replay) DeviceGetCount() (int, gonvml.Return) { return len(r.devs), r.ready() }

func (r *replay) DeviceGetHandleByIndex(i int) (gonvml.Device, gonvml.Return) {
	if ret := r.ready(); ret != gonvml.SUCCESS {
		return nil, ret
	}
	if i < 0 || i >= len(r.devs) {
		return nil, gonvml.ERROR_INVALID_ARGUMENT
	}
	return r.devs[i], gonvml.SUCCESS
}

func (r *replay) Extensions() gonvml.ExtendedInterface { return r }

// LookupSymbol says an optional entry point is missing when the recording
// has no answers from it, so readers skip it as on an old driver.
func (r *replay) LookupSymbol(name string) error {
	if name == "nvmlDeviceGetNumaNodeId" && !r.numa {
		return errors.New("symbol nvmlDeviceGetNumaNodeId not recorded")
	}
	if name == "nvmlDeviceGetNvLinkState" && !r.nvlink {
		return errors.New("NVLink state not recorded")
	}
	return nil
}

// replayDevice is one recorded GPU. go-nvml's Device interface has hundreds
// of methods; the embedded nil interface stands for those nothing here
// calls (calling one panics, as go-nvml's mock does).
type replayDevice struct {
	gonvml.Device
	index int
	g     SnapshotGPU
	pci   gonvml.PciInfo
}

func newReplayDevice(i int, g SnapshotGPU) *replayDevice {
	d := &replayDevice{index: i, g: g}
	for j := 0; j < len(g.PCIBusID) && j < len(d.pci.BusId)-1; j++ {
		d.pci.BusId[j] = int8(g.PCIBusID[j])
	}
	return d
}

func (d *replayDevice) GetIndex() (int, gonvml.Return)              { return d.index, gonvml.SUCCESS }
func (d *replayDevice) GetName() (string, gonvml.Return)            { return d.g.Name, gonvml.SUCCESS }
func (d *replayDevice) GetUUID() (string, gonvml.Return)            { return d.g.UUID, gonvml.SUCCESS }
func (d *replayDevice) GetPciInfo() (gonvml.PciInfo, gonvml.Return) { return d.pci, gonvml.SUCCESS }

func (d *replayDevice) GetMemoryInfo() (gonvml.Memory, gonvml.Return) {
	return gonvml.Memory{Total: d.g.MemoryTotal, Free: d.g.MemoryTotal}, gonvml.SUCCESS
}

func (d *replayDevice) GetNumaNodeId() (int, gonvml.Return) {
	if d.g.NUMANode == nil {
		return 0, gonvml.ERROR_NOT_SUPPORTED
	}
	return *d.g.NUMANode, gonvml.SUCCESS
}

func (d *replayDevice) GetNvLinkState(link int) (gonvml.EnableState, gonvml.Return) {
	switch {
	case d.g.NVLinks == nil || *d.g.NVLinks == 0:
		return gonvml.FEATURE_DISABLED, gonvml.ERROR_NOT_SUPPORTED
	case link < *d.g.NVLinks:
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	case link < maxNVLinks:
		return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
	}
	return gonvml.FEATURE_DISABLED, gonvml.ERROR_INVALID_ARGUMENT
}

//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ReadGPUs initialises lib, reads every GPU and shuts lib down again. root
// is the host root for the sysfs NUMA fallback. An NVML failure before any
// GPU could be read is an *InitError (errors.Is ErrNoDriver,
// ErrLibraryNotFound, ErrVersionMismatch, ErrNoPermission, ErrNVML); a
// failure on one GPU's optional fact is a warning in the result.
func ReadGPUs(ctx context.Context, lib Library, root string) (*GPUs, error) {
	if r := lib.Init(); r != gonvml.SUCCESS {
		return nil, nvmlError(lib, "nvmlInit", r)
	}
	defer func() {
		if r := lib.Shutdown(); r != gonvml.SUCCESS {
			slog.Debug("nvmlShutdown", "code", returnName(r))
		}
	}()
	out := &GPUs{}
	drv, r := lib.SystemGetDriverVersion()
	if r != gonvml.SUCCESS {
		return nil, nvmlError(lib, "nvmlSystemGetDriverVersion", r)
	}
	out.DriverVersion = drv
	if v, r := lib.SystemGetCudaDriverVersion(); r == gonvml.SUCCESS {
		out.CUDAVersion = FormatCUDAVersion(v)
	} else {
		out.Warnings = append(out.Warnings, "CUDA driver version: "+returnName(r))
	}
	err := eachDevice(ctx, lib, func(i int, dev gonvml.Device, has optionalCalls) error {
		g, warns := readGPU(ctx, lib, root, i, dev, has.numa)
		if has.nvlink {
			g.NVLinks = nvLinks(dev)
		}
		out.GPUs = append(out.GPUs, g)
		out.Warnings = append(out.Warnings, warns...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachDevice calls fn with every device's index and handle, in order; it
// is ReadGPUs' and Capture's one loop over the devices.
func eachDevice(ctx context.Context, lib Library, fn func(i int, dev gonvml.Device, has optionalCalls) error) error {
	n, r := lib.DeviceGetCount()
	if r != gonvml.SUCCESS {
		return nvmlError(lib, "nvmlDeviceGetCount", r)
	}
	has := optionalCalls{
		numa:   hasSymbol(lib, "nvmlDeviceGetNumaNodeId"),
		nvlink: hasSymbol(lib, "nvmlDeviceGetNvLinkState"),
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		dev, r := lib.DeviceGetHandleByIndex(i)
		if r != gonvml.SUCCESS {
			return nvmlError(lib, fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		if err := fn(i, dev, has); err != nil {
			return err
		}
	}
	return nil
}

// readGPU reads one GPU; the PCI bus id is required (topology needs it),
// everything else is best effort.
func readGPU(ctx context.Context, lib Library, root string, i int, dev gonvml.Device, numaCall bool) (GPU, []string) {
	g := GPU{Index: i, NUMANode: -1}
	var warns []string
	warn := func(what string, r gonvml.Return) {
		warns = append(warns, fmt.Sprintf("GPU%d %s: %s", i, what, returnName(r)))
	}
	if name, r := dev.GetName(); r == gonvml.SUCCESS {
		g.Name = name
	} else {
		warn("name", r)
	}
	if uuid, r := dev.GetUUID(); r == gonvml.SUCCESS {
		g.UUID = uuid
	} else {
		warn("UUID", r)
	}
	if pci, r := dev.GetPciInfo(); r == gonvml.SUCCESS {
		id := cString(pci.BusId[:])
		if bdf, err := NormalizeBusID(id); err == nil {
			g.PCIAddress = bdf
		} else {
			warns = append(warns, fmt.Sprintf("GPU%d: %v", i, err))
		}
	} else {
		warn("PCI info", r)
	}
	if mem, r := dev.GetMemoryInfo(); r == gonvml.SUCCESS {
		g.MemoryTotal = mem.Total
	} else {
		warn("memory info", r)
	}
	if numaCall {
		if node, r := dev.GetNumaNodeId(); r == gonvml.SUCCESS {
			g.NUMANode, g.NUMASource = node, "nvml"
		}
	}
	if g.NUMASource == "" && g.PCIAddress != "" {
		if node, ok := sysfsNUMANode(ctx, root, g.PCIAddress); ok {
			g.NUMANode, g.NUMASource = node, "sysfs"
		}
	}
	return g, warns
}

// nvLinks counts dev's active NVLink links: 0 when NVML says NVLink is not
// supported on it, nil when it fails otherwise.
func nvLinks(dev gonvml.Device) *int {
	n := 0
	for l := range maxNVLinks {
		state, r := dev.GetNvLinkState(l)
		switch r {
		case gonvml.SUCCESS:
			if state == gonvml.FEATURE_ENABLED {
				n++
			}
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			return &n // no NVLink, or past the GPU's last link
		default:
			return nil
		}
	}
	return &n
}

// hasSymbol reports whether lib exports name; a library that cannot say
// (no extensions) is trusted to have it.
func hasSymbol(lib Library, name string) bool {
	ext := lib.Extensions()
	if ext == nil {
		return true
	}
	return ext.LookupSymbol(name) == nil
}

// cString converts NVML's NUL-terminated char array.
func cString(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}

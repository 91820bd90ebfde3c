package nvml

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// GPU is one NVIDIA GPU as NVML and sysfs describe it.
type GPU struct {
	Index int    `json:"index"`
	Name  string `json:"name"` // "NVIDIA H20"
	UUID  string `json:"uuid"` // "GPU-…"
	// PCIAddress is the sysfs form, "0000:17:00.0" (NVML's 8-digit domain
	// is normalised).
	PCIAddress string `json:"pci_address"`
	// NUMANode is -1 when neither NVML nor sysfs knows it.
	NUMANode int `json:"numa_node"`
	// NUMASource says where NUMANode came from: "nvml", "sysfs" or "".
	NUMASource string `json:"numa_source,omitempty"`
	// MemoryTotal is the framebuffer size in bytes.
	MemoryTotal uint64 `json:"memory_total_bytes"`
	// NVLinks is the number of active NVLink links (0: none, NVML's
	// NOT_SUPPORTED); nil when NVML could not say.
	NVLinks *int `json:"nvlinks,omitempty"`
}

// GPUs is what NVML says about the host: driver, CUDA driver API version and
// the GPUs in NVML index order.
type GPUs struct {
	DriverVersion string `json:"driver_version"` // "535.161.08"
	// CUDAVersion is the CUDA driver API version, "12.2".
	CUDAVersion string `json:"cuda_version,omitempty"`
	GPUs        []GPU  `json:"gpus"`
	// Warnings are per-GPU reads that failed without stopping the rest.
	Warnings []string `json:"warnings,omitempty"`
}

// DriverMajor is the driver's major version (535 for "535.161.08"), 0 when
// the version does not parse.
func (g *GPUs) DriverMajor() int {
	return driverMajor(g.DriverVersion)
}

func driverMajor(v string) int {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(strings.TrimSpace(major))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// FormatCUDAVersion turns NVML's integer CUDA driver version (12020) into
// "12.2", as nvidia-smi prints it.
func FormatCUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

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
	n, r := lib.DeviceGetCount()
	if r != gonvml.SUCCESS {
		return nil, nvmlError(lib, "nvmlDeviceGetCount", r)
	}
	numaCall := hasSymbol(lib, "nvmlDeviceGetNumaNodeId")
	nvlinkCall := hasSymbol(lib, "nvmlDeviceGetNvLinkState")
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dev, r := lib.DeviceGetHandleByIndex(i)
		if r != gonvml.SUCCESS {
			return nil, nvmlError(lib, fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		g, warns := readGPU(lib, root, i, dev, numaCall)
		if nvlinkCall {
			g.NVLinks = nvLinks(dev)
		}
		out.GPUs = append(out.GPUs, g)
		out.Warnings = append(out.Warnings, warns...)
	}
	return out, nil
}

// readGPU reads one GPU; the PCI bus id is required (topology needs it),
// everything else is best effort.
func readGPU(lib Library, root string, i int, dev gonvml.Device, numaCall bool) (GPU, []string) {
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
		if node, ok := sysfsNUMANode(root, g.PCIAddress); ok {
			g.NUMANode, g.NUMASource = node, "sysfs"
		}
	}
	return g, warns
}

// maxNVLinks is NVML's NVML_NVLINK_MAX_LINKS.
const maxNVLinks = 18

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

// NVLink says whether the GPUs have NVLink: yes when any has an active
// link, no when NVML said none has, unknown otherwise (or no GPU).
func (g *GPUs) NVLink() Support {
	if g == nil || len(g.GPUs) == 0 {
		return SupportUnknown
	}
	out := SupportNo
	for _, x := range g.GPUs {
		switch {
		case x.NVLinks == nil:
			out = SupportUnknown
		case *x.NVLinks > 0:
			return SupportYes
		}
	}
	return out
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

// sysfsNUMANode reads the function's numa_node, through the
// sys/bus/pci/devices link or, where a recording kept no links, in the
// device tree; -1 (the kernel's "unknown") and unreadable files report false.
func sysfsNUMANode(root, bdf string) (int, bool) {
	r, err := hostfs.Open(root)
	if err != nil {
		return -1, false
	}
	defer r.Close()
	b, err := r.ReadFile(path.Join("sys/bus/pci/devices", bdf, "numa_node"), maxSysfsFile)
	if err != nil {
		rel, rerr := resolvePCI(r, bdf)
		if rerr != nil {
			return -1, false
		}
		if b, err = r.ReadFile(path.Join("sys", rel, "numa_node"), maxSysfsFile); err != nil {
			return -1, false
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1, false
	}
	return n, true
}

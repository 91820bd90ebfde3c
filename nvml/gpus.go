package nvml

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/internal/nvrules"
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
	n, _ := nvrules.Major(g.DriverVersion)
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

// sysfsNUMANode reads the function's numa_node, through the
// sys/bus/pci/devices link or, where a recording kept no links, in the
// device tree; -1 (the kernel's "unknown") and unreadable files report false.
func sysfsNUMANode(ctx context.Context, root, bdf string) (int, bool) {
	r, err := hostfs.OpenContext(ctx, root)
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

// String is the GPU on one line ("GPU0 NVIDIA H20 0000:17:00.0 NUMA 0
// NVLinks 18"), NVLinks "?" when NVML could not say: %v of a GPU printed
// the optional count's address.
func (g GPU) String() string {
	links := "?"
	if g.NVLinks != nil {
		links = strconv.Itoa(*g.NVLinks)
	}
	return fmt.Sprintf("GPU%d %s %s NUMA %d NVLinks %s", g.Index, g.Name, g.PCIAddress, g.NUMANode, links)
}

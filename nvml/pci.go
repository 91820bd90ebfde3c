package nvml

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// PCIPath is where a PCI function sits in the host's PCI tree, read from
// sys/bus/pci/devices/<bdf> (a link into sys/devices/pciDDDD:BB/...).
type PCIPath struct {
	Address string `json:"address"` // "0000:19:00.0"
	// HostBridge is the root complex the path starts at, "pci0000:16".
	HostBridge string `json:"host_bridge"`
	// Chain is every PCI function from the root port down to Address,
	// Address last.
	Chain []string `json:"chain"`
	// NUMANode is the function's numa_node, -1 when unknown.
	NUMANode int `json:"numa_node"`
	// CPUList is local_cpulist ("0-47,96-143"), "" when absent.
	CPUList string `json:"cpu_list,omitempty"`
}

// ErrNoPCIDevice is returned when a PCI address is not in the host's tree.
var ErrNoPCIDevice = errors.New("PCI device not found")

// ReadPCIPath resolves a PCI address under root. It follows
// sys/bus/pci/devices/<bdf> (relative or absolute link, kept inside root);
// when that entry is missing it looks for the function under
// sys/devices/pci*. It gives up when ctx ends (the error names the file
// and wraps ctx's).
func ReadPCIPath(ctx context.Context, root, bdf string) (PCIPath, error) {
	addr, err := NormalizeBusID(bdf)
	if err != nil {
		return PCIPath{}, err
	}
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return PCIPath{}, err
	}
	defer r.Close()
	return readPCIPath(r, addr)
}

func readPCIPath(r *hostfs.Root, addr string) (PCIPath, error) {
	rel, err := resolvePCI(r, addr)
	if err != nil {
		return PCIPath{}, err
	}
	p, err := parsePCIDevicePath(rel)
	if err != nil {
		return PCIPath{}, err
	}
	if p.Address != addr {
		return PCIPath{}, fmt.Errorf("sys/bus/pci/devices/%s points at %s", addr, rel)
	}
	dir := path.Join("sys", rel)
	p.NUMANode = -1
	// Both files are optional; one that is there but unreadable (a FIFO,
	// a read ctx cut short) is an error naming it.
	if b, err := r.ReadFile(path.Join(dir, "numa_node"), maxSysfsFile); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return PCIPath{}, fmt.Errorf("sys/%s/numa_node: %q is not a number", rel, strings.TrimSpace(string(b)))
		}
		if n >= 0 {
			p.NUMANode = n
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return PCIPath{}, err
	}
	if b, err := r.ReadFile(path.Join(dir, "local_cpulist"), maxSysfsFile); err == nil {
		p.CPUList = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return PCIPath{}, err
	}
	return p, nil
}

// resolvePCI returns the device's directory relative to root/sys, e.g.
// "devices/pci0000:16/0000:16:01.0/0000:17:00.0". The link's text is only
// a name: what is read under it goes through the root.
func resolvePCI(r *hostfs.Root, addr string) (string, error) {
	link := path.Join("sys/bus/pci/devices", addr)
	target, err := r.Readlink(link)
	if err == nil {
		var abs string
		if path.IsAbs(target) {
			// An absolute link names the host's /sys: read it in root.
			abs = path.Clean(target)[1:]
		} else {
			abs = path.Join(path.Dir(link), target)
		}
		rel, ok := strings.CutPrefix(abs, "sys/")
		if !ok || strings.HasPrefix(abs, "..") {
			return "", fmt.Errorf("sys/bus/pci/devices/%s: link %q leaves sys", addr, target)
		}
		return rel, nil
	}
	// No link (or not a link): search the device tree.
	var found string
	roots, _ := r.Glob("sys/devices/pci*")
	fsys := r.FS()
	for _, root := range roots {
		_ = fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || found != "" {
				return fs.SkipDir
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == addr {
				found = path
				return fs.SkipAll
			}
			if path != root && !looksLikeBDF(d.Name()) {
				return fs.SkipDir
			}
			return nil
		})
		if found != "" {
			return strings.TrimPrefix(found, "sys/"), nil
		}
	}
	return "", fmt.Errorf("%s: %w (no sys/bus/pci/devices/%s, not under sys/devices/pci*)", addr, ErrNoPCIDevice, addr)
}

// parsePCIDevicePath splits "devices/pci0000:16/0000:16:01.0/.../0000:19:00.0".
func parsePCIDevicePath(rel string) (PCIPath, error) {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	if len(parts) < 3 || parts[0] != "devices" || !strings.HasPrefix(parts[1], "pci") {
		return PCIPath{}, fmt.Errorf("sys/%s: not a PCI device path (want devices/pciDDDD:BB/...)", rel)
	}
	p := PCIPath{HostBridge: parts[1]}
	for _, c := range parts[2:] {
		if !looksLikeBDF(c) {
			return PCIPath{}, fmt.Errorf("sys/%s: %q is not a PCI address", rel, c)
		}
		p.Chain = append(p.Chain, c)
	}
	p.Address = p.Chain[len(p.Chain)-1]
	return p, nil
}

// looksLikeBDF reports whether s is a sysfs PCI address "0000:17:00.0".
func looksLikeBDF(s string) bool {
	if len(s) != 12 {
		return false
	}
	n, err := NormalizeBusID(s)
	return err == nil && n == strings.ToLower(s)
}

// switches groups the bridges above the device as NCCL does
// (src/graph/xml.cc walks sysfs two levels at a time: a switch's
// downstream and upstream ports are one node): pairs from the bottom, each
// keyed by its upper port; a root port left alone at the top belongs to
// the host bridge. Returned top first.
func (p PCIPath) switches() []string {
	if len(p.Chain) < 2 {
		return nil
	}
	bridges := p.Chain[:len(p.Chain)-1]
	var out []string
	for i := len(bridges) - 1; i >= 1; i -= 2 {
		out = append(out, bridges[i-1])
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// numaNodes counts sys/devices/system/node/node<N> under root (0 when the
// directory is absent).
func numaNodes(ctx context.Context, root string) int {
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return 0
	}
	defer r.Close()
	m, _ := r.Glob("sys/devices/system/node/node[0-9]*")
	return len(m)
}

// Bounds on what a host root may make a reader hold: sysfs attributes are
// at most a page, module lists a few lines.
const (
	maxSysfsFile  = 64 << 10
	maxConfigFile = 1 << 20
)

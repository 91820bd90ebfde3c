// Package gpugen adds GPUs to recorded-host trees (testdata/hosts/<name>.tar.gz):
// the PCI tree under sys/devices (root ports, PCIe switches, GPU functions
// with vendor, device, class, numa_node, local_cpulist), the
// sys/bus/pci/devices links, sys/devices/system/node and the NVML snapshot
// erdmakit/nvml.json, so that `--root` replays GPUs, GPUDirect RDMA
// readiness and the GPU<->eRDMA topology without a GPU machine.
//
// Like internal/hostgen (which writes the eRDMA parts of the same trees) it
// owns only the files it lists in erdmakit/gpugen-files.txt and removes
// only files an earlier run listed there.
package gpugen

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/nvml"
)

// ManifestPath lists the files gpugen owns in a tree.
const ManifestPath = "erdmakit/gpugen-files.txt"

// Spec is the GPU side of one recorded host.
type Spec struct {
	Host string // fixture name: testdata/hosts/<Host>.tar.gz
	// Snapshot is written as erdmakit/nvml.json; its GPUs' bus ids must be
	// those of GPUs.
	Snapshot nvml.Snapshot
	GPUs     []GPU
	// Nodes maps NUMA node -> cpulist, written as
	// sys/devices/system/node/node<N>/cpulist.
	Nodes map[int]string
}

// GPU is one GPU and the bridges above it.
type GPU struct {
	// HostBridge is "pci0000:16"; Bridges the functions from the root port
	// down (root port, switch upstream port, switch downstream port).
	HostBridge string
	Bridges    []string
	PCI        string // "0000:19:00.0"
	NUMA       int
	DeviceID   string // "0x2329"
}

// Bridge vendor/device ids written for the made-up bridges: an Intel root
// port and a Broadcom PEX switch.
const (
	rootPortVendor, rootPortDevice = "0x8086", "0x352a"
	switchVendor, switchDevice     = "0x1000", "0xc030"
	bridgeClass                    = "0x060400"
	gpuClass                       = "0x030200" // 3D controller
	nvidiaVendor                   = "0x10de"
)

// Write adds spec's files to the tree at dir.
func Write(dir string, spec Spec) error {
	old, err := readManifest(filepath.Join(dir, ManifestPath))
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	file := func(rel, content string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		owned[rel] = true
		return os.WriteFile(p, []byte(content), 0o644)
	}
	link := func(rel, target string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if cur, err := os.Readlink(p); err == nil && cur == target {
			owned[rel] = true
			return nil
		}
		_ = os.Remove(p)
		owned[rel] = true
		return os.Symlink(target, p)
	}
	cpus := func(node int) string { return spec.Nodes[node] }
	for _, g := range spec.GPUs {
		devPath := "sys/devices/" + g.HostBridge
		for i, b := range g.Bridges {
			devPath += "/" + b
			vendor, device := switchVendor, switchDevice
			if i == 0 {
				vendor, device = rootPortVendor, rootPortDevice
			}
			if err := pciFunction(file, devPath, vendor, device, bridgeClass, g.NUMA, cpus(g.NUMA)); err != nil {
				return err
			}
			if err := link("sys/bus/pci/devices/"+b, "../../.."+strings.TrimPrefix(devPath, "sys")); err != nil {
				return err
			}
		}
		devPath += "/" + g.PCI
		if err := pciFunction(file, devPath, nvidiaVendor, g.DeviceID, gpuClass, g.NUMA, cpus(g.NUMA)); err != nil {
			return err
		}
		if err := link("sys/bus/pci/devices/"+g.PCI, "../../.."+strings.TrimPrefix(devPath, "sys")); err != nil {
			return err
		}
	}
	for n, l := range spec.Nodes {
		if err := file(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), l+"\n"); err != nil {
			return err
		}
	}
	var b strings.Builder
	if err := spec.Snapshot.Write(&b); err != nil {
		return err
	}
	if err := file(nvml.SnapshotPath, b.String()); err != nil {
		return err
	}
	for rel := range old {
		if !owned[rel] {
			if err := os.Remove(filepath.Join(dir, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	owned[ManifestPath] = true
	list := make([]string, 0, len(owned))
	for rel := range owned {
		list = append(list, rel)
	}
	sort.Strings(list)
	return os.WriteFile(filepath.Join(dir, ManifestPath), []byte(strings.Join(list, "\n")+"\n"), 0o644)
}

func pciFunction(file func(rel, content string) error, dir, vendor, device, class string, numa int, cpus string) error {
	for name, v := range map[string]string{
		"vendor": vendor, "device": device, "class": class,
		"numa_node": fmt.Sprint(numa), "local_cpulist": cpus,
	} {
		if v == "" {
			continue
		}
		if err := file(dir+"/"+name, v+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func readManifest(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && l != ManifestPath {
			out[l] = true
		}
	}
	return out, sc.Err()
}

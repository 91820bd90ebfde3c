// Package hostgen writes recorded-host trees from a spec (cmd/hostgen packs
// them as testdata/hosts/<name>.tar.gz), laid out like the kernel's ib_core
// sysfs, so that the fixtures are reproducible and a benchmark can generate a host with any number of
// devices.
//
// The generator owns only the files it writes: it lists them in
// erdmakit/hostgen-files.txt and, when a tree is regenerated, removes only
// files that an earlier run listed there and this run no longer writes.
// Files other tools added to the same tree (GPU entries, nvml.json) are left
// alone.
package hostgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
)

// ManifestPath is the file, relative to a tree's root, listing the files the
// generator owns.
const ManifestPath = "erdmakit/hostgen-files.txt"

// Spec describes one recorded host.
type Spec struct {
	Name     string
	Readme   string // one paragraph: what the host is and how it was made
	Hostname string
	Kernel   string // proc/sys/kernel/osrelease
	Devices  []Device
	Netdevs  []erdma.Netdev
	// Modules lists loaded modules: name -> version file ("" for none).
	Modules map[string]string
	// CompatMode is sys/module/erdma/parameters/compat_mode ("" for no such
	// parameter); written only when the erdma module is loaded.
	CompatMode string
	Memlock    erdma.Limit
	Tools      []erdma.Tool
	Instance   *erdma.Instance
}

// Device is one RDMA device and its PCI function.
type Device struct {
	Name     string
	PCI      string // "0000:00:05.0"
	NUMA     int
	Driver   string // PCI driver, "erdma"
	Vendor   string // "0x1ded"
	DeviceID string // "0x107f"
	NodeType string // "1: CA"
	MAC      string // node_guid is its EUI-64
	FWVer    string
	UVerbs   int  // uverbsN index
	NoDevCh  bool // dev/infiniband/uverbsN absent
	Ports    []Port
}

// Port is one port of a device.
type Port struct {
	State     string // "4: ACTIVE"
	PhysState string // "5: LinkUp"
	Rate      string
	LinkLayer string
	// GIDTable is the GID table size (16 on eRDMA compat mode, 1 on iWARP);
	// entries not in GIDs read as all zeros.
	GIDTable int
	GIDs     []GID
	// NoGIDAttrs omits gid_attrs (iWARP devices have no GID cache).
	NoGIDAttrs bool
	Counters   map[string]uint64
}

// GID is one populated GID entry.
type GID struct {
	Index int
	GID   string // sysfs form, 8 groups of 4 hex digits
	Type  string // "RoCE v2"
	Ndev  string
}

// EUI64 returns the node_guid sysfs form of a MAC: the 0x02 bit of the first
// byte flipped and ff:fe inserted ("0216:3eff:fe2f:3775").
func EUI64(mac string) (string, error) {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return "", fmt.Errorf("hostgen: bad MAC %q", mac)
	}
	b := []byte{hw[0] ^ 0x02, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]}
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]), nil
}

// LinkLocalGID is the fe80::<EUI-64> GID of a MAC, sysfs form.
func LinkLocalGID(mac string) string {
	g, err := EUI64(mac)
	if err != nil {
		panic(err) // specs are code: a bad MAC is a programming error
	}
	return "fe80:0000:0000:0000:" + g
}

// IPv4GID is the ::ffff:<ip> GID of an IPv4 address, sysfs form.
func IPv4GID(ip string) string {
	v4 := net.ParseIP(ip).To4()
	if v4 == nil {
		panic("hostgen: bad IPv4 " + ip)
	}
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", v4[0], v4[1], v4[2], v4[3])
}

// MACGID is the iWARP GID of a MAC: the MAC in the first six bytes.
func MACGID(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:0000:0000:0000:0000:0000", hw[0], hw[1], hw[2], hw[3], hw[4], hw[5])
}

const zeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

// writer collects the files of one tree.
type writer struct {
	root  string
	files map[string]bool
	err   error
}

func (w *writer) file(rel, content string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.err = err
		return
	}
	w.files[rel] = true
}

func (w *writer) link(rel, target string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	if cur, err := os.Readlink(p); err == nil && cur == target {
		w.files[rel] = true
		return
	}
	_ = os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		w.err = err
		return
	}
	w.files[rel] = true
}

func (w *writer) json(rel string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		w.err = err
		return
	}
	w.file(rel, string(b)+"\n")
}

// Write writes spec's tree under dir (dir/<files>), replacing the files an
// earlier run wrote and leaving every other file alone.
func Write(dir string, spec Spec) error {
	w := &writer{root: dir, files: map[string]bool{}}
	old, err := readManifest(filepath.Join(dir, ManifestPath))
	if err != nil {
		return err
	}
	if spec.Readme != "" {
		w.file("README.md", "# "+spec.Name+"\n\n"+spec.Readme+"\n")
	}
	if spec.Kernel != "" {
		w.file("proc/sys/kernel/osrelease", spec.Kernel+"\n")
	}
	if spec.Hostname != "" {
		w.file("proc/sys/kernel/hostname", spec.Hostname+"\n")
	}
	for _, d := range spec.Devices {
		if err := writeDevice(w, d); err != nil {
			return fmt.Errorf("hostgen %s: %w", spec.Name, err)
		}
	}
	if len(spec.Devices) > 0 {
		w.file("sys/class/infiniband_verbs/abi_version", "6\n")
		w.file("dev/infiniband/rdma_cm", "")
	}
	mods := make([]string, 0, len(spec.Modules))
	for m := range spec.Modules {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		w.file("sys/module/"+m+"/initstate", "live\n")
		if v := spec.Modules[m]; v != "" {
			w.file("sys/module/"+m+"/version", v+"\n")
		}
		if m == "erdma" && spec.CompatMode != "" {
			w.file("sys/module/erdma/parameters/compat_mode", spec.CompatMode+"\n")
		}
	}
	netdevs := spec.Netdevs
	if netdevs == nil {
		netdevs = []erdma.Netdev{}
	}
	w.json("erdmakit/netdevs.json", netdevs)
	w.json("erdmakit/limits.json", map[string]erdma.Limit{"memlock": spec.Memlock})
	tools := spec.Tools
	if tools == nil {
		tools = []erdma.Tool{}
	}
	w.json("erdmakit/tools.json", tools)
	if spec.Instance != nil {
		w.json("erdmakit/instance.json", spec.Instance)
	}
	if w.err != nil {
		return fmt.Errorf("hostgen %s: %w", spec.Name, w.err)
	}
	// Remove what an earlier run owned and this one does not.
	for rel := range old {
		if !w.files[rel] {
			if err := os.Remove(filepath.Join(dir, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	w.files[ManifestPath] = true
	list := make([]string, 0, len(w.files))
	for f := range w.files {
		list = append(list, f)
	}
	sort.Strings(list)
	return os.WriteFile(filepath.Join(dir, ManifestPath), []byte(strings.Join(list, "\n")+"\n"), 0o644)
}

func readManifest(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			m[l] = true
		}
	}
	return m, sc.Err()
}

// hostBridge is the pci0000:XX directory of a PCI address.
func hostBridge(pci string) string {
	parts := strings.Split(pci, ":")
	if len(parts) < 2 {
		return "pci0000:00"
	}
	return "pci" + parts[0] + ":" + parts[1]
}

func writeDevice(w *writer, d Device) error {
	guid, err := EUI64(d.MAC)
	if err != nil {
		return err
	}
	fn := "sys/devices/" + hostBridge(d.PCI) + "/" + d.PCI
	w.file(fn+"/vendor", d.Vendor+"\n")
	w.file(fn+"/device", d.DeviceID+"\n")
	w.file(fn+"/class", "0x020000\n")
	w.file(fn+"/numa_node", fmt.Sprintf("%d\n", d.NUMA))
	if d.Driver != "" {
		w.link(fn+"/driver", "../../../bus/pci/drivers/"+d.Driver)
		w.link("sys/bus/pci/drivers/"+d.Driver+"/"+d.PCI, "../../../../devices/"+hostBridge(d.PCI)+"/"+d.PCI)
		w.link("sys/bus/pci/drivers/"+d.Driver+"/module", "../../../../module/"+d.Driver)
	}
	w.link("sys/bus/pci/devices/"+d.PCI, "../../../devices/"+hostBridge(d.PCI)+"/"+d.PCI)

	ib := fn + "/infiniband/" + d.Name
	w.link("sys/class/infiniband/"+d.Name, "../../devices/"+hostBridge(d.PCI)+"/"+d.PCI+"/infiniband/"+d.Name)
	w.link(ib+"/device", "../../../"+d.PCI)
	w.file(ib+"/node_type", d.NodeType+"\n")
	w.file(ib+"/node_guid", guid+"\n")
	w.file(ib+"/sys_image_guid", guid+"\n")
	w.file(ib+"/fw_ver", d.FWVer+"\n")
	for i, p := range d.Ports {
		pd := fmt.Sprintf("%s/ports/%d", ib, i+1)
		w.file(pd+"/state", p.State+"\n")
		w.file(pd+"/phys_state", p.PhysState+"\n")
		w.file(pd+"/rate", p.Rate+"\n")
		w.file(pd+"/link_layer", p.LinkLayer+"\n")
		w.file(pd+"/lid", "0x0\n")
		w.file(pd+"/sm_lid", "0x0\n")
		byIdx := map[int]GID{}
		for _, g := range p.GIDs {
			byIdx[g.Index] = g
		}
		for n := 0; n < p.GIDTable; n++ {
			g, ok := byIdx[n]
			if !ok {
				// The kernel: all zeros, and gid_attrs reads fail with
				// EINVAL; a recording leaves those attribute files out.
				w.file(fmt.Sprintf("%s/gids/%d", pd, n), zeroGID+"\n")
				continue
			}
			w.file(fmt.Sprintf("%s/gids/%d", pd, n), g.GID+"\n")
			if !p.NoGIDAttrs {
				w.file(fmt.Sprintf("%s/gid_attrs/types/%d", pd, n), g.Type+"\n")
				w.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", pd, n), g.Ndev+"\n")
			}
		}
		names := make([]string, 0, len(p.Counters))
		for c := range p.Counters {
			names = append(names, c)
		}
		sort.Strings(names)
		for _, c := range names {
			w.file(fmt.Sprintf("%s/hw_counters/%s", pd, c), fmt.Sprintf("%d\n", p.Counters[c]))
		}
	}
	uv := fmt.Sprintf("uverbs%d", d.UVerbs)
	w.link("sys/class/infiniband_verbs/"+uv, "../../devices/"+hostBridge(d.PCI)+"/"+d.PCI+"/infiniband_verbs/"+uv)
	w.file(fn+"/infiniband_verbs/"+uv+"/ibdev", d.Name+"\n")
	w.file(fn+"/infiniband_verbs/"+uv+"/abi_version", "1\n")
	w.file(fn+"/infiniband_verbs/"+uv+"/dev", fmt.Sprintf("231:%d\n", 192+d.UVerbs))
	if !d.NoDevCh {
		w.file("dev/infiniband/"+uv, "")
	}
	return w.err
}

// CopyTree copies a host tree: directories, regular files and symlinks (kept
// as symlinks); anything else is an error.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
		return fmt.Errorf("hostgen: %s is neither file, directory nor symlink", p)
	})
}

package nvml

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// RecordFiles returns what a recording of root needs so that `--root`
// replays its GPUs (for erdma.RecordOptions.Files): erdmakit/nvml.json
// captured from lib, every PCI function from each GPU's root port down
// (numa_node, local_cpulist, vendor, device, class: readers find the
// functions by walking sys/devices when the sys/bus/pci/devices links are
// not recorded), the GPUDirect RDMA files NCCL reads, the boot-time module
// lists and the NUMA nodes' cpulists. Files that do not exist are left out.
func RecordFiles(ctx context.Context, lib Library, root, note string) (map[string][]byte, error) {
	s, err := Capture(ctx, lib, note)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		return nil, err
	}
	out := map[string][]byte{SnapshotPath: buf.Bytes()}
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	add := func(rel string) {
		if b, err := r.ReadFile(rel, maxSysfsFile); err == nil {
			out[rel] = b
		}
	}
	for _, g := range s.GPUs {
		bdf, err := NormalizeBusID(g.PCIBusID)
		if err != nil {
			continue
		}
		rel, err := resolvePCI(r, bdf)
		if err != nil {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := 3; i <= len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			for _, f := range []string{"numa_node", "local_cpulist", "vendor", "device", "class"} {
				add("sys/" + dir + "/" + f)
			}
		}
	}
	for _, rel := range gdrRecordFiles {
		add(rel)
	}
	// libibverbs only by name (its file name carries rdma-core's
	// version): an empty stand-in, as dev/infiniband's files are.
	for _, g := range libibverbsGlobs {
		libs, _ := r.Glob(g)
		for _, rel := range libs {
			if libibverbsVer.MatchString(path.Base(rel)) {
				out[rel] = []byte{}
			}
		}
	}
	confs, _ := r.Glob("etc/modules-load.d/*.conf")
	nodes, _ := r.Glob("sys/devices/system/node/node[0-9]*/cpulist")
	for _, rel := range append(confs, nodes...) {
		add(rel)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("GPU files under %s: %w", root, err)
	}
	return out, nil
}

// RecordPaths lists the files under root that erdma.Record should capture
// (erdma.RecordOptions.Paths, which keeps symlinks on the way) so that a
// recording replays s's GPUs: each GPU's and bridge's attributes through
// its sys/bus/pci/devices link, the GPUDirect RDMA files NCCL reads, the
// boot-time module lists and the NUMA nodes' cpulists. Only files that
// exist are listed. The snapshot itself goes in RecordOptions.Files under
// SnapshotPath (Snapshot.Write). It stops listing when ctx ends (a
// recording is then not written: erdma.Record checks ctx).
func RecordPaths(ctx context.Context, root string, s *Snapshot) []string {
	var out []string
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return nil
	}
	defer r.Close()
	seen := map[string]bool{}
	add := func(rel string) {
		if seen[rel] {
			return
		}
		if fi, err := r.Stat(rel); err == nil && fi.Mode().IsRegular() {
			seen[rel] = true
			out = append(out, rel)
		}
	}
	for _, g := range s.GPUs {
		bdf, err := NormalizeBusID(g.PCIBusID)
		if err != nil {
			continue
		}
		p, err := readPCIPath(r, bdf)
		if err != nil {
			continue
		}
		for _, fn := range p.Chain {
			for _, f := range []string{"numa_node", "local_cpulist", "vendor", "device", "class"} {
				add("sys/bus/pci/devices/" + fn + "/" + f)
			}
		}
	}
	for _, rel := range gdrRecordFiles {
		add(rel)
	}
	var globbed []string
	for _, pat := range []string{"etc/modules-load.d/*.conf", "sys/devices/system/node/node[0-9]*/cpulist"} {
		m, _ := r.Glob(pat)
		globbed = append(globbed, m...)
	}
	for _, rel := range globbed {
		add(rel)
	}
	return out
}

// gdrRecordFiles are the module and memory_peers files ReadGDR looks at.
var gdrRecordFiles = []string{
	"sys/module/nvidia/version", "sys/module/nvidia/initstate",
	"sys/module/nvidia_peermem/version", "sys/module/nvidia_peermem/initstate",
	"sys/module/nv_peer_mem/version", "sys/module/nv_peer_mem/initstate",
	"sys/kernel/mm/memory_peers/nv_mem/version", "sys/kernel/mm/memory_peers/nv_mem_nc/version",
	"etc/modules", "etc/rc.local", "etc/rc.d/rc.local",
	// DMA-BUF: the kernel release and the NVIDIA module's flavour.
	"proc/sys/kernel/osrelease", "proc/driver/nvidia/version", "sys/module/nvidia/taint",
}

package nvml

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/internal/nvrules"
)

// GDR paths: how GPUDirect RDMA reaches the RDMA stack.
const (
	// GDRPeermem is nvidia_peermem, bundled with NVIDIA driver >=
	// PeermemMinDriver.
	GDRPeermem = "nvidia_peermem"
	// GDRNvPeerMem is the legacy out-of-tree nv_peer_mem (Mellanox).
	GDRNvPeerMem = "nv_peer_mem"
	// GDRMemoryPeers is a memory_peers registration NCCL reads
	// (sys/kernel/mm/memory_peers/nv_mem[_nc]/version) without either
	// module being visible under sys/module.
	GDRMemoryPeers = "memory_peers"
)

// PeermemMinDriver is the first driver major version that bundles
// nvidia_peermem (the rule's one owner is internal/nvrules, which the host
// checks share).
const PeermemMinDriver = nvrules.PeermemMin

// GDR is GPUDirect RDMA readiness as NCCL checks it
// (src/transport/net_ib/gdr.cc: memory_peers nv_mem and nv_mem_nc, and
// sys/module/nvidia_peermem/version).
type GDR struct {
	Ready bool `json:"ready"`
	// Path is the mechanism NCCL will use: "dmabuf" when DMA-BUF is
	// supported (NCCL prefers it), else "nvidia_peermem", "nv_peer_mem",
	// "memory_peers", or "" when none is.
	Path string `json:"path,omitempty"`
	// Peermem is the peer-memory mechanism seen ("nvidia_peermem",
	// "nv_peer_mem", "memory_peers"), "" when none, whatever Path is.
	Peermem string `json:"peermem,omitempty"`
	// DMABUF is what decides GPUDirect RDMA through DMA-BUF.
	DMABUF DMABUF `json:"dmabuf"`
	// Version is the module's or memory_peers' version file, where present.
	Version string `json:"version,omitempty"`
	// Persistent reports whether the module (nvidia_peermem or nv_peer_mem)
	// is named in etc/modules-load.d/*.conf, etc/modules or an rc.local, so
	// it is loaded again after a reboot. PersistenceKnown is false when the
	// root has none of those files (a recording without etc/).
	Persistent       bool `json:"persistent"`
	PersistenceKnown bool `json:"persistence_known"`
	// Evidence quotes what was read, with paths relative to the root.
	Evidence []string `json:"evidence"`
	// Missing says what is missing, in words ("" when ready).
	Missing string `json:"missing,omitempty"`
	// Remediation is the step that fixes Missing, or that makes a ready
	// but non-persistent setup survive a reboot.
	Remediation string `json:"remediation,omitempty"`
}

// ReadGDR is the one rule for GPUDirect RDMA readiness (the doctor's
// gdr-peermem, nccl env, setup): it checks both paths under root, a
// peer-memory module (the files NCCL reads) and DMA-BUF (ReadDMABUF, which
// includes the RDMA provider: on eRDMA DMA-BUF is refused and nvidia_peermem
// stays required). driverVersion is NVML's ("535.161.08"), "" when NVML is
// unavailable: it only shapes the advice. probes are a live DMA-BUF probe's
// answers (see ReadDMABUF). Every read gives up when ctx ends: the answer is
// then not ready, Missing saying what was being read when it was cut short.
func ReadGDR(ctx context.Context, root, driverVersion string, probes ...ProbeResult) GDR {
	g, cut := readPeermem(ctx, root, driverVersion)
	g.DMABUF = ReadDMABUF(ctx, root, probes...)
	if cut != nil || ctx.Err() != nil {
		// What was not read reads as absent: say why instead.
		if cut == nil {
			cut = fmt.Errorf("%s: %w", root, ctx.Err())
		}
		g.Ready, g.Path, g.Version, g.Peermem = false, "", "", ""
		g.Missing, g.Remediation = "not decided: "+cut.Error(), ""
		g.Evidence = append(g.Evidence, g.DMABUF.Evidence...)
		return g
	}
	g.Evidence = append(g.Evidence, g.DMABUF.Evidence...)
	switch {
	case g.DMABUF.Supported == SupportYes:
		// Persistence of a module NCCL does not need is no concern.
		g.Ready, g.Path, g.Version = true, GDRDMABUF, ""
		g.Missing, g.Remediation = "", ""
	case g.Ready:
	case len(g.DMABUF.RefusedBy()) > 0:
		// DMA-BUF is no way out here: only the module is.
		g.Missing += "; DMA-BUF: " + strings.Join(g.DMABUF.Missing, "; ")
	default:
		g.Missing += "; DMA-BUF: " + strings.Join(g.DMABUF.Missing, "; ")
		g.Remediation += "; " + nvrules.DMABUFAlternative
	}
	return g
}

// readPeermem is the peer-memory path: nvidia_peermem, nv_peer_mem, or a
// memory_peers registration.
// The error is the first read that ctx's end cut short, if one was.
func readPeermem(ctx context.Context, root, driverVersion string) (GDR, error) {
	g := GDR{Evidence: []string{}}
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		g.Missing = err.Error()
		return g, cutBy(ctx, err)
	}
	defer r.Close()
	var cut error
	exists := func(rel string) bool {
		_, err := r.Stat(rel)
		if cut == nil {
			cut = cutBy(ctx, err)
		}
		return err == nil
	}
	version := func(rel string) string {
		b, err := r.ReadFile(rel, maxSysfsFile)
		if err != nil {
			if cut == nil {
				cut = cutBy(ctx, err)
			}
			if unreadable(err) {
				g.Evidence = append(g.Evidence, fmt.Sprintf("%s: unreadable: %v", rel, err))
			}
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	note := func(rel string, present bool) {
		if present {
			if v := version(rel); v != "" && strings.HasSuffix(rel, "version") {
				g.Evidence = append(g.Evidence, fmt.Sprintf("%s: %s", rel, v))
				return
			}
			g.Evidence = append(g.Evidence, rel+": present")
			return
		}
		g.Evidence = append(g.Evidence, rel+": absent")
	}
	peermem := exists("sys/module/nvidia_peermem")
	note("sys/module/nvidia_peermem", peermem)
	legacy := exists("sys/module/nv_peer_mem")
	note("sys/module/nv_peer_mem", legacy)
	var peers []string
	for _, rel := range []string{"sys/kernel/mm/memory_peers/nv_mem/version", "sys/kernel/mm/memory_peers/nv_mem_nc/version"} {
		ok := exists(rel)
		note(rel, ok)
		if ok {
			peers = append(peers, rel)
		}
	}
	nvidia := exists("sys/module/nvidia")
	note("sys/module/nvidia", nvidia)

	switch {
	case peermem:
		g.Ready, g.Path = true, GDRPeermem
		g.Version = version("sys/module/nvidia_peermem/version")
	case legacy:
		g.Ready, g.Path = true, GDRNvPeerMem
		g.Version = version("sys/module/nv_peer_mem/version")
	case len(peers) > 0:
		g.Ready, g.Path = true, GDRMemoryPeers
		g.Version = version(peers[0])
	}
	g.Peermem = g.Path
	if g.Ready {
		if g.Path != GDRMemoryPeers {
			var where string
			g.PersistenceKnown, g.Persistent, where = modulePersistent(r, g.Path)
			switch {
			case !g.PersistenceKnown:
				g.Evidence = append(g.Evidence, "etc/modules-load.d, etc/modules, rc.local: absent (persistence across reboots not checked)")
			case g.Persistent:
				g.Evidence = append(g.Evidence, fmt.Sprintf("%s: lists %s", where, g.Path))
			default:
				g.Evidence = append(g.Evidence, fmt.Sprintf("etc/modules-load.d/*.conf, etc/modules, rc.local: no %s", g.Path))
				g.Remediation = fmt.Sprintf("echo %s > /etc/modules-load.d/%s.conf  # so it is loaded again after a reboot", g.Path, g.Path)
			}
		}
		return g, cut
	}
	major, _ := nvrules.Major(driverVersion)
	switch {
	case major >= PeermemMinDriver:
		g.Missing = fmt.Sprintf("driver %d >= %d bundles nvidia_peermem but it is not loaded", major, PeermemMinDriver)
		g.Remediation = "modprobe nvidia_peermem, and add it to /etc/modules-load.d/ so it survives a reboot: echo nvidia_peermem > /etc/modules-load.d/nvidia_peermem.conf"
	case major > 0:
		g.Missing = fmt.Sprintf("driver %d predates nvidia_peermem (>= %d) and nv_peer_mem is not loaded", major, PeermemMinDriver)
		g.Remediation = "upgrade the NVIDIA driver to " + nvrules.AtLeast() + " and modprobe nvidia_peermem, or build and load nv_peer_mem (github.com/Mellanox/nv_peer_memory)"
	case !nvidia:
		g.Missing = "no NVIDIA driver loaded (sys/module/nvidia absent), so no GPUDirect RDMA module either"
		g.Remediation = "install and load the NVIDIA driver (" + nvrules.AtLeast() + "), then modprobe nvidia_peermem"
	default:
		g.Missing = "nvidia_peermem is not loaded (driver version unknown: NVML unavailable)"
		g.Remediation = "modprobe nvidia_peermem (driver " + nvrules.AtLeast() + "), and add it to /etc/modules-load.d/ so it survives a reboot"
	}
	return g, cut
}

// modulePersistent reports whether any boot-time module list exists under
// root (known), whether one names module, and which.
func modulePersistent(r *hostfs.Root, module string) (known, listed bool, where string) {
	files, _ := r.Glob("etc/modules-load.d/*.conf")
	if _, err := r.Stat("etc/modules-load.d"); err == nil {
		known = true
	}
	for _, rel := range []string{"etc/modules", "etc/rc.local", "etc/rc.d/rc.local"} {
		if _, err := r.Stat(rel); err == nil {
			known = true
			files = append(files, rel)
		}
	}
	for _, rel := range files {
		if fileListsModule(r, rel, module) {
			return true, true, rel
		}
	}
	return known, false, ""
}

func fileListsModule(r *hostfs.Root, rel, module string) bool {
	f, err := r.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxConfigFile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		// A modules list names the module first; rc.local runs
		// "modprobe nvidia_peermem" (or insmod a path).
		for _, f := range strings.Fields(line) {
			f = strings.TrimSuffix(path.Base(f), ".ko")
			if strings.ReplaceAll(f, "-", "_") == module {
				return true
			}
		}
	}
	return false
}

// unreadable reports an error other than "not there" or "a directory"
// (a module's directory is read as its name): a file that is there but
// cannot be read, which the evidence names.
func unreadable(err error) bool {
	return err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EISDIR)
}

// cutBy is err when ctx's end caused it, else nil.
func cutBy(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return nil
}

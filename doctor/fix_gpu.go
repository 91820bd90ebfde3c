package doctor

import (
	"context"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/hostconf"
	"github.com/erdmakit/erdmakit/internal/nvrules"
	"github.com/erdmakit/erdmakit/nvml"
)

// PeermemFile is where the gpu stage persists nvidia_peermem (the file the
// gdr-peermem check's own advice names).
const PeermemFile = nvrules.PeermemFile

// gpuFix: guide step 2, GPUDirect RDMA. When the doctor's rule (nvml's GDR
// decision, the one the gdr-peermem check reports) says DMA-BUF is the
// path, nothing is needed; else nvidia_peermem loaded now and at boot. It
// plans from the report's GPU facts (Inventory.GPU), never reading the
// GPUs again.
func gpuFix() *Fix {
	return &Fix{Stage: StageGPU, Title: "GPUDirect RDMA ready, persisted", Plan: planGPU}
}

func planGPU(_ context.Context, in *Input, env *FixEnv) (*Plan, error) {
	p := NewPlan(StageGPU)
	inv := in.Inventory
	gi := inv.GPU
	if gi == nil {
		gi = &erdma.GPUInfo{}
	}
	version := ""
	if gi.Available {
		version = gi.DriverVersion
	}
	nvidia := moduleOf(inv, "nvidia")
	if version == "" && nvidia != nil && nvidia.Loaded {
		version = nvidia.Version
	}
	switch bundles, known := nvrules.BundlesPeermem(version); {
	case !gi.Available && (nvidia == nil || !nvidia.Loaded):
		p.Found = append(p.Found, "no NVIDIA driver loaded")
		if inv.Profile != nil {
			p.Blocked = "no NVIDIA driver on a GPU instance type (" + inv.Profile.Family + ")"
			p.Next = nvrules.InstallDriver() + "; then rerun erdmakit setup"
		}
		return p, nil
	case gi.GDRPath == nvml.GDRDMABUF:
		p.Found = append(p.Found, "NVIDIA driver "+orUnknownVersion(version), "GPUDirect RDMA through DMA-BUF: nvidia_peermem not needed")
		return p, nil
	case known && !bundles:
		// internal/nvrules owns the driver-version rule (its parser, its
		// minimum), as for the gpu-driver check and nvml.
		p.Found = append(p.Found, "NVIDIA driver "+version)
		p.Blocked = "NVIDIA " + nvrules.TooOld(version) + ": it has no nvidia_peermem"
		p.Next = nvrules.Upgrade() + ", or load nv_peer_mem yourself; then rerun erdmakit setup"
		return p, nil
	}
	p.Found = append(p.Found, "NVIDIA driver "+orUnknownVersion(version))
	loaded := false
	if m := moduleOf(inv, "nvidia_peermem"); m != nil && m.Loaded {
		p.Found = append(p.Found, "nvidia_peermem loaded")
		loaded = true
	} else if len(gi.DMABUFRefusedBy) > 0 {
		// The RDMA provider registers no dma-buf (eRDMA's): the module is
		// the only way (nvml.ReadGDR).
		p.Notes = append(p.Notes, "DMA-BUF is no alternative here: the "+strings.Join(gi.DMABUFRefusedBy, ", ")+" provider registers no dma-buf")
	} else {
		p.Notes = append(p.Notes, nvrules.DMABUFAlternative)
	}
	if err := planPeermemFile(p, env.files(in), gi); err != nil {
		return nil, err
	}
	planPeermemLoad(p, in, env, loaded)
	return p, nil
}

// planPeermemFile plans the boot-time file first: it is the fix at boot,
// whether or not the module loads now. A module another file already loads
// at boot needs none.
func planPeermemFile(p *Plan, files *hostconf.Files, gi *erdma.GPUInfo) error {
	old, ok, _ := files.Read(PeermemFile)
	if gi.GDRPersistent && gi.GDRPeermem != "" && !(ok && strings.Contains(old, "nvidia_peermem")) {
		p.Found = append(p.Found, gi.GDRPeermem+" already loaded at boot by another file")
		return nil
	}
	return p.addFile(files, []string{erdma.FindingGDRPeermem}, PeermemFile,
		"# GPUDirect RDMA over eRDMA (erdmakit doctor: gdr-peermem): load at boot\nnvidia_peermem\n", "gdr", true, 0o644)
}

// planPeermemLoad plans loading nvidia_peermem now, where commands may run.
func planPeermemLoad(p *Plan, in *Input, env *FixEnv, loaded bool) {
	c := Change{Checks: []string{erdma.FindingGDRPeermem}, Kind: KindCommand, Target: "nvidia_peermem", Command: "modprobe nvidia_peermem"}
	switch {
	case loaded:
	case env.commands(in):
		c.Revert = "modprobe -r nvidia_peermem"
		c.apply = func(ctx context.Context) error { return env.run(ctx, []string{"modprobe", "nvidia_peermem"}) }
		p.add(c)
	case !env.Describe:
		p.Notes = append(p.Notes, NoLiveChanges+" (nvidia_peermem loads at the next boot from "+PeermemFile+")")
	default:
		p.add(c)
	}
}

func moduleOf(inv *erdma.Inventory, name string) *erdma.Module {
	for i := range inv.Modules {
		if inv.Modules[i].Name == name {
			return &inv.Modules[i]
		}
	}
	return nil
}

func orUnknownVersion(v string) string {
	if v == "" {
		return "(version unknown)"
	}
	return v
}

package doctor

import (
	"context"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/nvrules"
	"github.com/erdmakit/erdmakit/nvml"
)

// PeermemFile is where the gpu stage persists nvidia_peermem.
const PeermemFile = "/etc/modules-load.d/erdmakit-nvidia-peermem.conf"

// gpuFix: guide step 2, GPUDirect RDMA. When the doctor's rule (nvml's GDR
// decision, the one the gdr-peermem check reports) says DMA-BUF is the
// path, nothing is needed; else nvidia_peermem loaded now and at boot.
func gpuFix() *Fix {
	return &Fix{Stage: StageGPU, Title: "GPUDirect RDMA ready, persisted",
		Plan: func(_ context.Context, in *Input, env *FixEnv) (*Plan, error) {
			p := NewPlan(StageGPU)
			checks := []string{erdma.FindingGDRPeermem}
			inv := in.Inventory
			version := ""
			if inv.GPU != nil && inv.GPU.Available {
				version = inv.GPU.DriverVersion
			}
			nvidia := moduleOf(inv, "nvidia")
			if version == "" && nvidia != nil && nvidia.Loaded {
				version = nvidia.Version
			}
			if (inv.GPU == nil || !inv.GPU.Available) && (nvidia == nil || !nvidia.Loaded) {
				p.Found = append(p.Found, "no NVIDIA driver loaded")
				if inv.Profile != nil {
					p.Blocked = "no NVIDIA driver on a GPU instance type (" + inv.Profile.Family + ")"
					p.Next = nvrules.InstallDriver() + "; then rerun erdmakit setup"
				}
				return p, nil
			}
			p.Found = append(p.Found, "NVIDIA driver "+orUnknownVersion(version))
			var gdr nvml.GDR
			if in.GPUs != nil {
				gdr = in.GPUs.GDR
			}
			if gdr.Ready && gdr.Path == nvml.GDRDMABUF {
				p.Found = append(p.Found, "GPUDirect RDMA through DMA-BUF: nvidia_peermem not needed")
				return p, nil
			}
			// internal/nvrules owns the driver-version rule (its parser,
			// its minimum), as for the gpu-driver check and nvml.
			if bundles, known := nvrules.BundlesPeermem(version); known && !bundles {
				p.Blocked = "NVIDIA " + nvrules.TooOld(version) + ": it has no nvidia_peermem"
				p.Next = nvrules.Upgrade() + ", or load nv_peer_mem yourself; then rerun erdmakit setup"
				return p, nil
			}
			files := env.files(in)
			loaded := false
			if m := moduleOf(inv, "nvidia_peermem"); m != nil && m.Loaded {
				p.Found = append(p.Found, "nvidia_peermem loaded")
				loaded = true
			} else if refused := gdr.DMABUF.RefusedBy(); len(refused) > 0 {
				// The RDMA provider registers no dma-buf (eRDMA's): the
				// module is the only way (nvml.ReadGDR).
				p.Notes = append(p.Notes, "DMA-BUF is no alternative here: the "+strings.Join(refused, ", ")+" provider registers no dma-buf")
			} else {
				p.Notes = append(p.Notes, nvrules.DMABUFAlternative)
			}
			// The file first: it is the fix at boot, whether or not the
			// module loads now.
			if old, ok, _ := files.Read(PeermemFile); gdr.Persistent && !(ok && strings.Contains(old, "nvidia_peermem")) && gdr.Peermem != "" {
				p.Found = append(p.Found, gdr.Peermem+" already loaded at boot by another file")
			} else if err := p.addFile(files, checks, PeermemFile,
				"# GPUDirect RDMA over eRDMA (erdmakit doctor: gdr-peermem): load at boot\nnvidia_peermem\n",
				"gdr", true, 0o644); err != nil {
				return nil, err
			}
			switch {
			case loaded:
			case env.commands(in):
				p.add(Change{Checks: checks, Kind: KindCommand, Target: "nvidia_peermem", Command: "modprobe nvidia_peermem",
					Revert: "modprobe -r nvidia_peermem",
					apply: func(ctx context.Context) error {
						return env.run(ctx, []string{"modprobe", "nvidia_peermem"})
					}})
			case !env.Describe:
				p.Notes = append(p.Notes, NoLiveChanges+" (nvidia_peermem loads at the next boot from "+PeermemFile+")")
			default:
				p.add(Change{Checks: checks, Kind: KindCommand, Target: "nvidia_peermem", Command: "modprobe nvidia_peermem"})
			}
			return p, nil
		}}
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

package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/spf13/cobra"
)

// newGPUsCmd: `erdmakit gpus`, the GPUs as NVML sees them and whether
// GPUDirect RDMA is ready.
func newGPUsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List the GPUs (NVML), the driver and CUDA versions, and GPUDirect RDMA readiness",
		Long: "Reads the GPUs through NVML (libnvidia-ml, loaded at run time; a recorded host replays\n" +
			"erdmakit/nvml.json) and checks GPUDirect RDMA the way NCCL does (nvidia_peermem, nv_peer_mem,\n" +
			"sys/kernel/mm/memory_peers). Exit 0; 1 when GPUDirect RDMA is not ready; 2 when NVML is unusable\n" +
			"(no driver, libnvidia-ml not found, driver/library mismatch); 3 when the host cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, _, err := inspectGPUs(cmd.Context(), g, false)
			if err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			rep.Topology = nil
			if g.json {
				if err := render.JSON(g.stdout, rep); err != nil {
					return &exitError{code: ExitUnknown, err: err}
				}
			} else if err := printGPUs(g, rep); err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			switch {
			case !rep.Available:
				return exitCode(ExitFail)
			case !rep.GDR.Ready:
				return exitCode(ExitWarn)
			}
			return nil
		},
	}
}

// inspectGPUs opens the host root and runs nvml.Inspect; withNICs passes
// the host's eRDMA devices for the topology.
func inspectGPUs(ctx context.Context, g *globals, withNICs bool) (*nvml.Report, []string, error) {
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		return nil, nil, err
	}
	defer closer.Close()
	lib, err := nvml.ForRoot(ctx, h.Root())
	if err != nil {
		return nil, nil, err
	}
	var nics []nvml.NIC
	var notes []string
	if withNICs {
		devs, errs, err := erdma.ReadDevices(ctx, h)
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, errs...)
		var note string
		nics, note = doctor.NICsOf(devs)
		if note != "" {
			notes = append(notes, note)
		}
	}
	rep, err := nvml.Inspect(ctx, lib, h.Root(), nics)
	if err != nil {
		return nil, nil, err
	}
	rep.Root = g.root
	return rep, notes, nil
}

func printGPUs(g *globals, rep *nvml.Report) error {
	w := g.stdout
	if !rep.Available {
		fmt.Fprintf(w, "NVML unavailable: %s\n  %s\n  fix: %s\n", rep.Reason, rep.Error, rep.Remediation)
	} else {
		fmt.Fprintf(w, "Driver %s, CUDA %s, %d GPUs\n\n", rep.GPUs.DriverVersion, orDash(rep.GPUs.CUDAVersion), len(rep.GPUs.GPUs))
		t := render.NewTable("GPU", "NAME", "PCI", "NUMA", "MEMORY", "UUID")
		for _, x := range rep.GPUs.GPUs {
			numa := "-"
			if x.NUMANode >= 0 {
				numa = strconv.Itoa(x.NUMANode)
			}
			t.Add(strconv.Itoa(x.Index), x.Name, x.PCIAddress, numa, fmt.Sprintf("%d MiB", x.MemoryTotal>>20), x.UUID)
		}
		if err := t.Write(w); err != nil {
			return err
		}
		for _, warn := range rep.GPUs.Warnings {
			fmt.Fprintln(w, "warning:", warn)
		}
	}
	fmt.Fprintln(w)
	gdr := rep.GDR
	if gdr.Ready {
		fmt.Fprintf(w, "GPUDirect RDMA: ready (%s %s)\n", gdr.Path, gdr.Version)
	} else {
		fmt.Fprintf(w, "GPUDirect RDMA: NOT ready: %s\n", gdr.Missing)
	}
	for _, e := range gdr.Evidence {
		fmt.Fprintln(w, "  "+e)
	}
	if gdr.Remediation != "" {
		fmt.Fprintln(w, "  fix: "+gdr.Remediation)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

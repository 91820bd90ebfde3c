package main

import (
	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/report/live"
	"github.com/spf13/cobra"
)

// newGPUsCmd: `erdmakit gpus`, the GPUs as NVML sees them and whether
// GPUDirect RDMA is ready; it exits by the doctor's GPU checks
// (doctor.CheckGPUs).
func newGPUsCmd(g *globals) *cobra.Command {
	var f doctorFlags
	c := &cobra.Command{
		Use:   "gpus",
		Short: "List the GPUs (NVML), the driver and CUDA versions, and GPUDirect RDMA readiness",
		Long: "Reads the GPUs through NVML (libnvidia-ml, loaded at run time; a recorded host replays\n" +
			"erdmakit/nvml.json) and checks GPUDirect RDMA the way NCCL does (nvidia_peermem, nv_peer_mem,\n" +
			"sys/kernel/mm/memory_peers, DMA-BUF), then runs the doctor's GPU checks (gpu-driver, gdr-peermem,\n" +
			"gpu-count, gpu-nic-distance) and prints those that are not ok. Exit by them, as the doctor decides:\n" +
			"0 ok; 1 a warning; 2 a failure (GPUDirect RDMA not ready, a GPU missing) or NVML unusable (no\n" +
			"driver, libnvidia-ml not found, driver/library mismatch); 3 when the host cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			h, closer, err := erdma.OpenHost(ctx, g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			checks, rep, err := doctor.CheckGPUs(ctx, h, f.options())
			if err != nil {
				return couldNotRun(err)
			}
			rep.Root, rep.Topology = g.root, nil
			if g.json {
				out := gpusJSON{Report: rep, Status: checks.Status, Findings: checks.Findings}
				if err := render.JSON(g.stdout, out); err != nil {
					return couldNotRun(err)
				}
			} else if err := live.WriteGPUsTable(g.stdout, rep, checks, g.tableOptions()); err != nil {
				return couldNotRun(err)
			}
			return exitCode(checks.Status.Exit())
		},
	}
	f.addInstanceFlags(c.Flags())
	return c
}

// gpusJSON is `gpus --json`: NVML's report with the doctor's GPU checks.
type gpusJSON struct {
	*nvml.Report
	Status   health.Severity  `json:"status"`
	Findings []health.Finding `json:"findings"`
}

package main

import (
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newDevicesCmd: `erdmakit devices`, ibv_devinfo and `rdma link` in one view.
func newDevicesCmd(g *globals) *cobra.Command {
	var skipTools, skipCounters bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List RDMA devices, ports, GIDs and their netdevs (ibv_devinfo + rdma link in one view)",
		Long: "Reads the host (or --root, a recorded host) and prints one row per RDMA port: driver, PCI address,\n" +
			"NUMA node, transport (roce = eRDMA compat mode, iwarp), port state, link layer, the paired netdev with\n" +
			"its IPv4 and MTU, the recommended GID index (the RoCE v2 ::ffff:<IPv4> entry) and the uverbs device.\n" +
			"--json prints the whole inventory. Exit 0, 1 when some reads failed (listed), 3 when nothing could be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, closer, err := erdma.OpenHost(cmd.Context(), g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			inv, err := erdma.ReadInventory(cmd.Context(), h, erdma.InventoryOptions{SkipTools: skipTools, SkipCounters: skipCounters})
			if err != nil {
				return couldNotRun(err)
			}
			if g.json {
				if err := render.JSON(g.stdout, inv); err != nil {
					return couldNotRun(err)
				}
			} else if err := report.WriteDevicesTable(g.stdout, inv, report.TableOptions{Color: g.colorOn(g.stdout)}); err != nil {
				return couldNotRun(err)
			}
			if len(inv.Errors) > 0 {
				for _, e := range inv.Errors {
					fmt.Fprintln(g.stderr, "erdmakit: read error:", e)
				}
				return exitCode(ExitWarn)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&skipTools, "skip-tools", false, "do not look for eadm, ofed_info, ib_write_bw, mpirun, ... on PATH")
	c.Flags().BoolVar(&skipCounters, "skip-counters", false, "do not read hw_counters")
	return c
}

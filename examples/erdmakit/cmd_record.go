package main

import (
	"errors"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/spf13/cobra"
)

// newRecordCmd: `erdmakit record`, capture what the inventory reads into a
// recording that --root replays.
func newRecordCmd(g *globals) *cobra.Command {
	var out string
	var redact, skipTools bool
	c := &cobra.Command{
		Use:   "record --out FILE.tar.gz",
		Short: "Record this host (or --root) into a .tar.gz that --root replays",
		Long: "Captures exactly the files and command outputs the inventory reads (sysfs, procfs, dev/infiniband,\n" +
			"netlink, RLIMIT_MEMLOCK, tool versions) in the recorded-host layout. Send the archive with a bug report;\n" +
			"`erdmakit devices --root FILE.tar.gz` and `erdmakit doctor --root FILE.tar.gz` replay it.\n" +
			"--redact replaces MACs, IPv4 addresses, GUIDs, GIDs, the host name and the instance id consistently.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: ExitUnknown, err: errors.New("record: --out FILE.tar.gz is required")}
			}
			h, closer, err := erdma.OpenHost(g.root)
			if err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			defer closer.Close()
			opt := erdma.RecordOptions{Redact: redact, Inventory: erdma.InventoryOptions{SkipTools: skipTools}}
			// The GPUs: what NVML says (or why it cannot), and the PCI and
			// GPUDirect files the nvml package reads, so --root replays them.
			if lib, err := nvml.ForRoot(h.Root()); err == nil {
				files, err := nvml.RecordFiles(cmd.Context(), lib, h.Root(), "erdmakit record")
				if err != nil {
					fmt.Fprintln(g.stderr, "erdmakit: record: GPUs not recorded:", err)
				}
				opt.Files = files
			}
			// Atomic: a failure leaves whatever --out was untouched.
			inv, err := erdma.RecordFile(cmd.Context(), h, out, opt)
			if err != nil {
				return &exitError{code: ExitUnknown, err: err}
			}
			red := ""
			if redact {
				red = ", redacted"
			}
			fmt.Fprintf(g.stdout, "recorded %d RDMA devices, %d netdevs, %d read errors%s to %s\n",
				len(inv.Devices), len(inv.Netdevs), len(inv.Errors), red, out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "archive to write (.tar.gz)")
	c.Flags().BoolVar(&redact, "redact", false, "replace MACs, IPs, GUIDs, host name and instance id consistently")
	c.Flags().BoolVar(&skipTools, "skip-tools", false, "do not run the tools' version queries")
	return c
}

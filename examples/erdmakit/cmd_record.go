package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/eri"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/spf13/cobra"
)

// newRecordCmd: `erdmakit record`, capture what the inventory reads into a
// recording that --root replays.
func newRecordCmd(g *globals) *cobra.Command {
	var out string
	var redact, skipTools, cloud bool
	ef := &eriFlags{metadataURL: erdma.DefaultMetadataURL, timeout: 10 * time.Second}
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
				return couldNotRun(errors.New("record: --out FILE.tar.gz is required"))
			}
			h, closer, err := erdma.OpenHost(cmd.Context(), g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			opt := doctor.RecordOptions{
				RecordOptions: erdma.RecordOptions{Redact: redact, Inventory: erdma.InventoryOptions{SkipTools: skipTools}},
				Verbs:         verbsprobe.Live{},
				Skipped: func(what string, err error) {
					fmt.Fprintf(g.stderr, "erdmakit: record: %s not recorded: %v\n", what, err)
				},
			}
			if cloud {
				if err := addCloudView(cmd.Context(), g, ef, redact, &opt.RecordOptions); err != nil {
					return eriExit(err)
				}
			}
			// Atomic: a failure leaves whatever --out was untouched.
			inv, err := doctor.Record(cmd.Context(), h, out, opt)
			if err != nil {
				return couldNotRun(err)
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
	c.Flags().BoolVar(&cloud, "cloud", false, "also store what the ECS API says about this instance's ENIs (erdmakit/cloud.json, no credentials) for the doctor's cloud checks")
	c.Flags().StringVar(&ef.endpoint, "endpoint", "", "with --cloud: ECS endpoint (default: $"+eri.EndpointEnv+", else the region's)")
	c.Flags().StringVar(&ef.metadataURL, "metadata-url", erdma.DefaultMetadataURL, "with --cloud: metadata service address")
	c.Flags().StringVar(&ef.target.Region, "region", "", "with --cloud: region id (default: the metadata service's)")
	c.Flags().StringVar(&ef.target.InstanceID, "instance-id", "", "with --cloud: instance id (default: the metadata service's)")
	c.Flags().StringVar(&ef.target.InstanceType, "instance-type", "", "with --cloud: instance type (default: the metadata service's)")
	return c
}

// addCloudView asks the ECS API for this instance's view and adds it to the
// recording; with --redact its ids, MACs and IPs are redacted like the rest
// of the recording (the channel layout stays).
func addCloudView(ctx context.Context, g *globals, ef *eriFlags, redact bool, opt *erdma.RecordOptions) error {
	t, c, err := ef.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	files, err := eri.RecordFiles(ctx, c, t)
	if err != nil {
		return err
	}
	if opt.Files == nil {
		opt.Files = map[string][]byte{}
	}
	for k, v := range files {
		opt.Files[k] = v
	}
	if redact {
		if opt.FileRedactors == nil {
			opt.FileRedactors = map[string]func(*erdma.Redactor, []byte) ([]byte, error){}
		}
		opt.FileRedactors[eri.ViewFile] = eri.RedactViewFile
	}
	return nil
}

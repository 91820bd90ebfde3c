package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report/live"
	"github.com/spf13/cobra"
)

// eriFlags are the flags every `eri` subcommand shares.
type eriFlags struct {
	target      eri.Target
	endpoint    string
	metadataURL string
	timeout     time.Duration
}

// newERICmd: `erdmakit eri status|attach|convert|configure|policy`.
func newERICmd(g *globals) *cobra.Command {
	f := &eriFlags{}
	c := &cobra.Command{
		Use:   "eri",
		Short: "The cloud side: this instance's ENIs and ERIs through the ECS OpenAPI; attach, convert, configure",
		Long: "Talks to the ECS OpenAPI (official SDK) with the default credential chain: ALIBABA_CLOUD_ACCESS_KEY_ID/\n" +
			"ALIBABA_CLOUD_ACCESS_KEY_SECRET, the aliyun CLI profile, OIDC/RRSA, or the instance's RAM role. Region,\n" +
			"instance id and type come from the metadata service unless given. `erdmakit eri policy` prints the\n" +
			"RAM policy the commands need. Exit 0 ok, 1 warn, 2 failed, 3 could not run (no credentials, no permission).",
	}
	pf := c.PersistentFlags()
	pf.StringVar(&f.target.Region, "region", "", "region id (default: the metadata service's)")
	pf.StringVar(&f.target.InstanceID, "instance-id", "", "instance id (default: the metadata service's)")
	pf.StringVar(&f.target.InstanceType, "instance-type", "", "instance type (default: the metadata service's)")
	pf.StringVar(&f.endpoint, "endpoint", "", "ECS endpoint host[:port] or URL (default: $"+eri.EndpointEnv+", else the region's)")
	pf.StringVar(&f.metadataURL, "metadata-url", erdma.DefaultMetadataURL, "ECS metadata service address")
	pf.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on each API call")
	c.AddCommand(newERIStatusCmd(g, f), newERIAttachCmd(g, f), newERIConvertCmd(g, f), newERIConfigureCmd(g, f),
		newERIPolicyCmd(g))
	return c
}

func (f *eriFlags) metadata() *erdma.MetadataClient {
	return &erdma.MetadataClient{BaseURL: f.metadataURL}
}

// open resolves the target and returns a client for it.
func (f *eriFlags) open(ctx context.Context) (eri.Target, *eri.Client, error) {
	t, err := eri.ResolveTarget(ctx, f.metadata(), f.target)
	if err != nil {
		return t, nil, err
	}
	c, err := eri.New(eri.Config{Region: t.Region, Endpoint: f.endpoint, Timeout: f.timeout, Logger: slog.Default()})
	return t, c, err
}

// eriExit maps an eri error to the exit code: 3 when the command could not
// run at all (no credentials or permission, not on ECS, no usable answer
// from the endpoint, throttled after the retries), 2 when the cloud refused
// or failed what it was asked.
func eriExit(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, eri.ErrNotOnECS) { // the library names no flag; the CLI does
		err = fmt.Errorf("%w; pass --instance-id, --region and --instance-type", err)
	}
	for _, cannot := range []error{eri.ErrNoCredentials, eri.ErrNotOnECS, eri.ErrForbidden, eri.ErrUnavailable,
		eri.ErrThrottled, eri.ErrUnknownAction} {
		if errors.Is(err, cannot) {
			return couldNotRun(err)
		}
	}
	return checkFailed(err)
}

func newERIStatusCmd(g *globals, f *eriFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "This instance's ENIs (traffic mode, NetworkCardIndex, status) matched by MAC to netdevs and eRDMA devices",
		Long: "DescribeNetworkInterfaces and DescribeInstanceTypes for this instance, each ENI matched by MAC to its local\n" +
			"netdev and eRDMA device (the host, or --root), judged by the doctor's checks network-card-channel and eri-mode\n" +
			"with their severities: exit 2 when two ERIs share a NetworkCardIndex (half bandwidth) or an ERI has no\n" +
			"netdev or eRDMA device in the OS.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, c, err := f.open(ctx)
			if err != nil {
				return eriExit(err)
			}
			defer c.Close()
			inv := localInventory(ctx, g)
			st, err := c.StatusOf(ctx, t, inv)
			if err != nil {
				return eriExit(err)
			}
			out := struct {
				*eri.Status
				Findings []health.Finding `json:"findings"`
			}{st, st.Findings()}
			if err := eriOutput(g, out, func() error { return live.WriteERIStatusTable(g.stdout, st, out.Findings) }); err != nil {
				return err
			}
			switch st.Worst() {
			case health.Fail:
				return exitCode(ExitFail)
			case health.Warn:
				return exitCode(ExitWarn)
			}
			return nil
		},
	}
}

// localInventory reads the host for MAC matching; nil when it cannot.
func localInventory(ctx context.Context, g *globals) *erdma.Inventory {
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		slog.Warn("no local view", "root", g.root, "err", err)
		return nil
	}
	defer closer.Close()
	inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: true, SkipCounters: true})
	if err != nil {
		slog.Warn("no local view", "root", g.root, "err", err)
		return nil
	}
	return inv
}

// eriOutput prints v as JSON with --json, else with table; a failed write
// is exit 3.
func eriOutput(g *globals, v any, table func() error) error {
	var err error
	if g.json {
		err = render.JSON(g.stdout, v)
	} else {
		err = table()
	}
	if err != nil {
		return couldNotRun(err)
	}
	return nil
}

func newERIAttachCmd(g *globals, f *eriFlags) *cobra.Command {
	var opt eri.AttachOptions
	var terway bool
	c := &cobra.Command{
		Use:   "attach",
		Short: "Create and attach the missing ERIs, each on its own NetworkCardIndex (idempotent; --dry-run)",
		Long: "Brings the instance to --count ERIs (default: what the type allows, at most 2), each on its own\n" +
			"NetworkCardIndex: each new one is created with NetworkInterfaceTrafficMode=HighPerformance in the primary\n" +
			"ENI's vSwitch and security groups, its share of the instance's queue pairs, tagged erdmakit:instance-id=<id>\n" +
			"(and terway.alibabacloud.com/excluded=true on a Terway node), and attached on a free card; then waits\n" +
			"until InUse. Two ERIs on one card: the second is detached and re-attached on a free card, which needs the\n" +
			"instance stopped. Transient errors are retried. A rerun after a failure attaches what it created before,\n" +
			"never a third ERI. --dry-run reads (Describe*) and prints every call it would make, making none.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			t, c, err := f.open(ctx)
			if err != nil {
				return eriExit(err)
			}
			defer c.Close()
			if !g.json {
				opt.Progress = func(s string) { fmt.Fprintln(g.stderr, "erdmakit eri attach:", s) }
			}
			if terway {
				opt.TerwayExclude = true
			} else if h, closer, herr := erdma.OpenHost(ctx, g.root); herr == nil {
				opt.TerwayExclude = eri.AttachOptionsFor(ctx, h).TerwayExclude
				closer.Close()
			}
			res, err := c.Attach(ctx, t, opt)
			if res != nil {
				if oerr := eriOutput(g, res, func() error { return live.WriteAttachResult(g.stdout, res) }); oerr != nil {
					return oerr
				}
			}
			return eriExit(err)
		},
	}
	c.Flags().IntVar(&opt.Count, "count", 0, "ERIs wanted (default: the type's EriQuantity, at most 2)")
	c.Flags().BoolVar(&opt.DryRun, "dry-run", false, "print the calls, make none")
	c.Flags().DurationVar(&opt.Wait, "wait", 3*time.Minute, "bound on the wait for each ERI to reach InUse")
	c.Flags().BoolVar(&terway, "terway-exclude", false, "tag new ERIs terway.alibabacloud.com/excluded=true (default: when /etc/cni/net.d has a Terway configuration)")
	return c
}

func newERIConvertCmd(g *globals, f *eriFlags) *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "convert ENI-ID",
		Short: "Switch an attached ENI to HighPerformance (ModifyNetworkInterfaceAttribute); warns about its channel",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, c, err := f.open(ctx)
			if err != nil {
				return eriExit(err)
			}
			defer c.Close()
			res, err := c.Convert(ctx, t, args[0], dryRun)
			if err != nil {
				return eriExit(err)
			}
			return eriOutput(g, res, func() error {
				if res.Call.Action != "" {
					verb := "made"
					if dryRun {
						verb = "would make (dry run)"
					}
					fmt.Fprintf(g.stdout, "call %s: %s\n", verb, res.Call)
				}
				if res.Warn != "" {
					fmt.Fprintln(g.stdout, "warn:", res.Warn)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the call, make none")
	return c
}

func newERIConfigureCmd(g *globals, f *eriFlags) *cobra.Command {
	var opt eri.ConfigureOptions
	var cloud bool
	c := &cobra.Command{
		Use:   "configure",
		Short: "Inside the OS: each ERI netdev up with its metadata IPv4/prefix, a gateway route above the primary's metric, MTU 8500",
		Long: "For each ERI netdev (by MAC: the cloud's ERIs with --cloud, else every eRDMA device's netdev): link up, the\n" +
			"IPv4 and prefix the metadata service gives (primary-ip-address, vswitch-cidr-block), a default route via its\n" +
			"gateway with a metric above the primary's, MTU 8500 (--mtu 1400 without jumbo frames). An interface already\n" +
			"up with an IPv4 is reported, not touched. Netlink, no `ip` commands; --dry-run prints what it would do.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if g.root != "/" {
				return couldNotRun(errors.New("eri configure acts on this host's network: --root does not apply"))
			}
			var view *eri.View
			if cloud {
				t, c, err := f.open(ctx)
				if err != nil {
					return eriExit(err)
				}
				defer c.Close()
				if view, err = c.Describe(ctx, t); err != nil {
					return eriExit(err)
				}
			}
			macs := eri.ERIMACs(view, localInventory(ctx, g))
			if len(macs) == 0 {
				return checkFailed(errors.New("no ERI netdev found (no eRDMA device in the OS; with --cloud: no ERI attached): run erdmakit eri attach, install the driver"))
			}
			opt.Metadata = f.metadata()
			res, err := eri.Configure(ctx, macs, opt)
			if oerr := eriOutput(g, res, func() error { return live.WriteConfigureResult(g.stdout, res, opt.DryRun) }); oerr != nil {
				return oerr
			}
			if err != nil {
				return checkFailed(err)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&opt.DryRun, "dry-run", false, "print what would be done, do nothing")
	c.Flags().IntVar(&opt.MTU, "mtu", eri.MTUJumbo, "MTU: 8500 (jumbo frames) or 1400")
	c.Flags().BoolVar(&cloud, "cloud", false, "take the ERIs' MACs from the ECS API instead of the local eRDMA devices")
	return c
}

func newERIPolicyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "policy",
		Short: "Print the RAM policy (JSON) the eri commands and the doctor's cloud checks need",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(g.stdout, eri.PolicyJSON())
			return err
		},
	}
}

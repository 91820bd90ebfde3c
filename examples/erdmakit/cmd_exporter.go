package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/monitor"
	"github.com/spf13/cobra"
)

// defaultExporterAddr is where the exporter listens unless told otherwise.
const defaultExporterAddr = ":9810"

func newExporterCmd(g *globals) *cobra.Command {
	var (
		listen   string
		noDoctor bool
		toolsTTL time.Duration
		maxConns int
		cloud    string
	)
	c := &cobra.Command{
		Use:   "exporter",
		Short: "Serve Prometheus metrics: devices, ports, hw_counters, netdevs, doctor findings",
		Long: `exporter serves /metrics for Prometheus. Every scrape reads sysfs on demand (no
background polling): device and port info and state, every hw_counter as a counter
with device/port/stat labels, the paired netdev's MTU and operstate, and the
doctor's findings as erdmakit_doctor_check{id=...} (0 ok, 1 warn, 2 fail, -1 skip),
so alerts can fire on "nvidia_peermem not loaded". --root serves a recorded host.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, closer, err := erdma.OpenHost(cmd.Context(), g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return couldNotRun(err)
			}
			fmt.Fprintf(g.stderr, "erdmakit exporter: serving http://%s/metrics\n", l.Addr())
			var cl *eri.CloudOptions
			switch cloud {
			case eri.CloudOff:
			case eri.CloudAuto, eri.CloudOn:
				// One API call per exporter run (refreshed hourly), never per scrape.
				cl = &eri.CloudOptions{Mode: cloud, Cache: &eri.ViewCache{}}
			default:
				return couldNotRun(fmt.Errorf("--cloud %q: want auto, on or off", cloud))
			}
			snap := hostSnapshot(h, !noDoctor, toolsTTL, exporterMetadata(), cl)
			if maxConns < 1 {
				return couldNotRun(fmt.Errorf("exporter: --max-conns %d: want at least 1", maxConns))
			}
			col := monitor.NewCollector(snap, 10*time.Second)
			if err := monitor.ServeLimits(cmd.Context(), l, col, monitor.Limits{MaxConns: maxConns}); err != nil {
				return couldNotRun(err)
			}
			return nil
		},
	}
	markUntilInterrupted(c)
	f := c.Flags()
	f.StringVar(&listen, "listen", defaultExporterAddr, "address to serve /metrics on")
	f.BoolVar(&noDoctor, "no-doctor", false, "do not run the doctor's checks on each scrape")
	f.IntVar(&maxConns, "max-conns", monitor.DefaultLimits().MaxConns, "connections held at once; one more closes an idle or slow one, never a scrape in progress (see docs/monitor.md, Reliability and security)")
	f.DurationVar(&toolsTTL, "tools-ttl", 5*time.Minute, "how long the versions of eadm, ofed_info, ... are cached between scrapes")
	f.StringVar(&cloud, "cloud", eri.CloudOff, "the doctor's cloud checks (network-card-channel from the ECS API, eri-mode): off, auto or on; the API is asked once per run (refreshed hourly), never per scrape")
	completeValues(c, "cloud", eri.CloudOff, eri.CloudAuto, eri.CloudOn)
	return c
}

// exporterMetadataTTL is how long the exporter keeps the instance the
// metadata service named (a failure: a minute).
const exporterMetadataTTL = 10 * time.Minute

// exporterMetadata is the metadata client of one exporter run: the
// instance is looked up once and then every exporterMetadataTTL, not on
// every scrape (off Alibaba Cloud a lookup costs its whole timeout).
func exporterMetadata() *erdma.MetadataClient {
	return &erdma.MetadataClient{Cache: &erdma.MetadataCache{TTL: exporterMetadataTTL}}
}

// hostSnapshot is doctor.Snapshot with the CLI's doctor defaults: the
// instance from md (cached: see exporterMetadata); cloud, when set, adds the
// doctor's cloud checks with their view cached across scrapes.
func hostSnapshot(h erdma.Host, withDoctor bool, ttl time.Duration, md *erdma.MetadataClient, cloud *eri.CloudOptions) monitor.SnapshotFunc {
	o := doctor.SnapshotOptions{Doctor: doctorDefaults(), InventoryOnly: !withDoctor, ToolsTTL: ttl}
	o.Doctor.Metadata = md
	if cloud != nil {
		o.Checks = func(ctx context.Context) []doctor.Check {
			return doctor.HostChecks(eri.DoctorChecks(ctx, h, *cloud)...)
		}
	}
	return doctor.Snapshot(h, o)
}

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/report"
)

func newPerftestCmd(g *globals) *cobra.Command {
	var (
		f      perftestFlags
		expect float64
	)
	c := &cobra.Command{
		Use:   "perftest [SERVER]",
		Short: "Run ib_write_bw server and client pairs, one per device in parallel, and report like bw",
		Long: `perftest runs the eRDMA guide's bandwidth recipe with Debian/OFED perftest:
ib_write_bw -d DEV -F -q 16 --report_gbits -p PORT, one server and one client
per device, each device on its own port (18515, 18516, ...). Without SERVER
both run on this host (loopback); with SERVER only the clients run here,
against 'erdmakit perftest --serve' (or ib_write_bw servers) there.
Exit: 0 ok, 1 below --expect-gbps (default: the instance type's figure
when every eRDMA device is tested), 2 a pair failed, 3 bad usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.options(cmd.Context(), g, args)
			if err != nil {
				return err
			}
			var runs []perftest.Run
			if f.serve {
				fmt.Fprintf(g.stderr, "perftest: ib_write_bw servers for %v from port %d\n", o.Devices, max(o.Port, perftest.DefaultPort))
				runs = perftest.ServeWriteBW(cmd.Context(), o)
			} else {
				runs = perftest.RunWriteBW(cmd.Context(), o)
			}
			want := expect
			if want == 0 && !f.serve {
				// One ib_write_bw pair per device, each device into its
				// namesake on its own port.
				want = instanceExpectation(cmd.Context(), g, "perftest", o.Devices, false)
			}
			rep := perftest.Judge(runs, want, f.serve)
			printErrors(g, perftest.ErrorLines(rep.Runs, "ib_write_bw"))
			return emit(g, rep, rep.Status, func() error {
				return report.WritePerftestTable(g.stdout, rep, report.TableOptions{Color: g.colorOn(g.stdout), Serve: f.serve})
			})
		},
	}
	fl := c.Flags()
	fl.StringArrayVarP(&f.o.Devices, "device", "d", nil, "RDMA device (repeatable; default: every eRDMA device)")
	fl.IntVarP(&f.o.Port, "port", "p", perftest.DefaultPort, "first device's port; the next devices use the next ports")
	fl.IntVarP(&f.o.QPs, "qps", "q", 16, "queue pairs per device (-q)")
	fl.StringVarP(&f.size, "size", "s", "", "bytes per write (-s; default perftest's 65536)")
	fl.BoolVarP(&f.o.All, "all", "a", false, "all sizes 2 B .. 8 MiB (-a)")
	fl.IntVarP(&f.o.Iterations, "iters", "n", 0, "iterations (-n)")
	fl.DurationVarP(&f.o.Duration, "duration", "D", 0, "run for this long (-D, whole seconds)")
	fl.IntVarP(&f.o.GIDIndex, "gid-index", "x", -1, "GID index (-x; default perftest's choice)")
	f.conn.add(fl, "-R for iWARP-mode devices, which need it")
	fl.StringVar(&f.o.Binary, "binary", "ib_write_bw", "the ib_write_bw program")
	fl.StringVar(&f.o.LoopbackAddr, "loopback-addr", "", "address loopback clients connect to (default 127.0.0.1, or the device's IPv4 with -R)")
	fl.DurationVar(&f.o.Timeout, "timeout", 0, "bound on each pair (default: -D + 60s, or 120s)")
	fl.BoolVar(&f.serve, "serve", false, "run only the servers (for clients on another host)")
	fl.Float64Var(&expect, "expect-gbps", 0, "warn (exit 1) when the total is below this")
	fl.StringArrayVar(&f.o.Extra, "extra", nil, "extra ib_write_bw argument for both sides (repeatable)")
	c.AddCommand(newPerftestLatCmd(g))
	return c
}

func newPerftestLatCmd(g *globals) *cobra.Command {
	var (
		f      perftestFlags
		expect float64
	)
	c := &cobra.Command{
		Use:   "lat [SERVER]",
		Short: "Run ib_write_lat server and client pairs, one device after the other, and judge the median",
		Long: `perftest lat runs perftest's write-latency test, ib_write_lat -d DEV -F -p PORT,
one server and one client per device (each device on its own port: 18515,
18516, ...; one device after the other, so that they do not measure each
other). Without SERVER both run on this host (loopback); with SERVER only the
clients run here, against 'erdmakit perftest lat --serve' there.
Exit: 0 ok, 1 a median (t_typical) above --expect-us, 2 a pair failed, 3 bad usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.options(cmd.Context(), g, args)
			if err != nil {
				return err
			}
			var runs []perftest.Run
			if f.serve {
				fmt.Fprintf(g.stderr, "perftest: ib_write_lat servers for %v from port %d\n", o.Devices, max(o.Port, perftest.DefaultPort))
				runs = perftest.ServeWriteLat(cmd.Context(), o)
			} else {
				runs = perftest.RunWriteLat(cmd.Context(), o)
			}
			rep := perftest.JudgeLatency(runs, expect, f.serve)
			printErrors(g, perftest.ErrorLines(rep.Runs, "ib_write_lat"))
			return emit(g, rep, rep.Status, func() error {
				return report.WritePerftestLatencyTable(g.stdout, rep, report.TableOptions{Color: g.colorOn(g.stdout), Serve: f.serve})
			})
		},
	}
	fl := c.Flags()
	fl.StringArrayVarP(&f.o.Devices, "device", "d", nil, "RDMA device (repeatable; default: every eRDMA device)")
	fl.IntVarP(&f.o.Port, "port", "p", perftest.DefaultPort, "first device's port; the next devices use the next ports")
	fl.StringVarP(&f.size, "size", "s", "", "bytes per write (-s; default ib_write_lat's 2)")
	fl.BoolVarP(&f.o.All, "all", "a", false, "all sizes 2 B .. 8 MiB (-a)")
	fl.IntVarP(&f.o.Iterations, "iters", "n", 0, "iterations (-n; default ib_write_lat's 1000)")
	fl.IntVarP(&f.o.GIDIndex, "gid-index", "x", -1, "GID index (-x; default perftest's choice)")
	f.conn.add(fl, "-R for iWARP-mode devices, which need it")
	fl.StringVar(&f.o.Binary, "binary", "ib_write_lat", "the ib_write_lat program")
	fl.StringVar(&f.o.LoopbackAddr, "loopback-addr", "", "address loopback clients connect to (default 127.0.0.1, or the device's IPv4 with -R)")
	fl.DurationVar(&f.o.Timeout, "timeout", 0, "bound on each pair (default 120s)")
	fl.BoolVar(&f.serve, "serve", false, "run only the servers (for clients on another host)")
	fl.Float64Var(&expect, "expect-us", 0, "warn (exit 1) when a median (t_typical) is above this many microseconds")
	fl.StringArrayVar(&f.o.Extra, "extra", nil, "extra ib_write_lat argument for both sides (repeatable)")
	return c
}

// perftestFlags are what perftest and perftest lat share: ib_*'s options,
// --serve, -s and --conn/-R.
type perftestFlags struct {
	o     perftest.Options
	serve bool
	size  string
	conn  connFlag
}

// options checks the flags against args (SERVER) and fills in the method,
// the size, the default devices and the host root.
func (f *perftestFlags) options(ctx context.Context, g *globals, args []string) (perftest.Options, error) {
	o := f.o
	if len(args) == 1 {
		if f.serve {
			return o, fmt.Errorf("--serve takes no SERVER")
		}
		o.Server = args[0]
	}
	method, err := f.conn.get()
	if err != nil {
		return o, err
	}
	o.Method = method
	if f.size != "" {
		n, err := units.Parse(f.size, perf.MaxSize)
		if err != nil {
			return o, err
		}
		o.Size = int(n)
	}
	if len(o.Devices) == 0 {
		if o.Devices, err = perf.DefaultDevices(ctx, g.root); err != nil {
			return o, err
		}
	}
	o.Root = g.root
	return o, nil
}

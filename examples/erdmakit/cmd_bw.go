package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/plot"
	"github.com/erdmakit/erdmakit/report"
)

// bwFlags are the perftest-like knobs of `bw`.
type bwFlags struct {
	devices      []string
	serverDevice string
	size         string
	all          bool
	sizes        string
	iters        int
	duration     time.Duration
	warmup       time.Duration
	cooldown     time.Duration
	qps          int
	txDepth      int
	cqMod        int
	postList     int
	inline       int
	oldPostSend  bool
	port         int
	ibPort       int
	gidIndex     int
	conn         connFlag
	expect       float64
	plot         string
	stepTimeout  time.Duration
	emulate      float64
	emulateLat   time.Duration // bw lat's --emulate-latency
	progress     bool
}

func (f *bwFlags) add(c *cobra.Command, client bool) {
	fl := c.Flags()
	fl.StringArrayVarP(&f.devices, "device", "d", nil, "RDMA device (repeatable; default: every eRDMA device)")
	fl.IntVarP(&f.port, "port", "p", perf.DefaultPort, "TCP port of the out-of-band exchange (avoids 30608-30623, held by eRDMA)")
	fl.IntVarP(&f.ibPort, "ib-port", "i", 1, "device port")
	fl.IntVarP(&f.gidIndex, "gid-index", "x", -1, "source GID index (default: the RoCE v2 entry of the netdev's IPv4)")
	fl.DurationVar(&f.stepTimeout, "step-timeout", perf.DefaultStepTimeout, "bound on each out-of-band message")
	fl.Float64Var(&f.emulate, "emulate-gbps", 0, "use an emulated device of this rate instead of RDMA (checks the protocol and the CLI)")
	if !client {
		return
	}
	fl.StringVar(&f.serverDevice, "server-device", "", "the server's device every stream writes into (default: from several devices each into the server's device of its name, from one the server's first; loopback: the same device)")
	fl.StringVarP(&f.size, "size", "s", "65536", "bytes per RDMA write (suffixes K, M)")
	fl.BoolVarP(&f.all, "all", "a", false, "sweep sizes 2 B .. 8 MiB, powers of two")
	fl.StringVar(&f.sizes, "sizes", "", "sweep these sizes, comma-separated (4K,64K,1M)")
	fl.IntVarP(&f.iters, "iters", "n", 0, "iterations per QP (default 5000 unless -D)")
	fl.DurationVarP(&f.duration, "duration", "D", 0, "measure for this long instead of -n (perftest -D, in Go duration form: 10s)")
	fl.DurationVar(&f.warmup, "warmup", perf.DefaultMargin, "unmeasured time before the measured phase (-D only)")
	fl.DurationVar(&f.cooldown, "cooldown", perf.DefaultMargin, "unmeasured time after the measured phase (-D only)")
	fl.IntVarP(&f.qps, "qps", "q", 1, "queue pairs per device (the eRDMA guide uses 16)")
	fl.IntVarP(&f.txDepth, "tx-depth", "t", perf.DefaultTxDepth, "send queue depth per QP")
	fl.IntVarP(&f.cqMod, "cq-mod", "Q", 0, "signal one write in this many (default 100; above 8 KiB 1, or the tx depth when it is 16 or less)")
	fl.IntVarP(&f.postList, "post-list", "l", 0, "writes per post list (default: every free slot)")
	fl.IntVarP(&f.inline, "inline", "I", 0, "max inline size in bytes")
	fl.BoolVar(&f.oldPostSend, "use-old-post-send", false, "post with ibv_post_send even where the device has the work request API (ibv_wr_*), as perftest's option")
	f.conn.add(fl, "by the device's transport")
	fl.Float64Var(&f.expect, "expect-gbps", 0, "warn (exit 1) when the total at the largest size is below this")
	fl.StringVar(&f.plot, "plot", "", "draw Gbit/s against message size into this SVG file")
	fl.BoolVar(&f.progress, "progress", false, "print progress to stderr even when it is not a terminal")
}

func (f *bwFlags) config(g *globals) (perf.Config, []int, error) {
	method, err := f.conn.get()
	if err != nil {
		return perf.Config{}, nil, err
	}
	cfg := perf.Config{QPs: f.qps, Iterations: f.iters, Duration: f.duration, TxDepth: f.txDepth,
		CQMod: f.cqMod, PostList: f.postList, Inline: f.inline, OldPostSend: f.oldPostSend, Method: method, StepTimeout: f.stepTimeout,
		Warmup: f.warmup, Cooldown: f.cooldown}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1
	}
	if cfg.Cooldown == 0 {
		cfg.Cooldown = -1
	}
	var sizes []int
	switch {
	case f.all:
		sizes = perf.Sweep()
	case f.sizes != "":
		for _, s := range strings.Split(f.sizes, ",") {
			n, err := units.Parse(s, perf.MaxSize)
			if err != nil {
				return cfg, nil, err
			}
			sizes = append(sizes, int(n))
		}
	default:
		n, err := units.Parse(f.size, perf.MaxSize)
		if err != nil {
			return cfg, nil, err
		}
		cfg.Size = int(n)
		sizes = []int{cfg.Size}
	}
	if cfg.Size == 0 {
		cfg.Size = sizes[0]
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	if f.progress || render.IsTerminal(g.stderr) {
		var mu sync.Mutex
		cfg.Progress = func(p perf.Progress) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(g.stderr, "%-10s %8s  %6.1fs  %9.3f Gbit/s\n", p.Device, units.Format(int64(p.Size), units.Compact), p.Elapsed.Seconds(), p.Gbps)
		}
	}
	return cfg, sizes, nil
}

// openLinks opens the devices (or emulated ones); closeAll closes them.
func (f *bwFlags) openLinks(ctx context.Context, g *globals) (links []perf.Link, closeAll func(), err error) {
	if f.emulate > 0 {
		names := f.devices
		if len(names) == 0 {
			names = []string{"emulated0"}
		}
		for _, n := range names {
			links = append(links, perf.NewEmulatedLink(n, f.emulate, f.emulateLat))
		}
		return links, func() {}, nil
	}
	links, closer, err := perf.OpenVerbsLinks(ctx, f.devices, perf.VerbsOptions{Root: g.root, IBPort: f.ibPort, GIDIndex: f.gidIndex})
	if err != nil {
		return nil, nil, err
	}
	return links, func() {
		if err := closer.Close(); err != nil {
			slog.Warn("closing devices", "err", err)
		}
	}, nil
}

func newBwCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "bw",
		Short: "Measure RDMA write bandwidth natively (ib_write_bw's test, with device-counter proof)",
		Long: `bw measures RDMA WRITE bandwidth like perftest's ib_write_bw, without perftest:
'bw serve' on one host, 'bw run HOST' on the other, or 'bw loopback' for every
eRDMA device of this host in parallel; 'bw lat [HOST]' measures write latency
as ib_write_lat does. Exit: 0 ok, 1 below --expect-gbps (default: the instance
type's figure when every eRDMA device is tested), 2 a test failed (or device counters did not move), 3 bad usage.`,
	}
	c.AddCommand(newBwServeCmd(g), newBwRunCmd(g), newBwLoopbackCmd(g), newBwMeshCmd(g), newBwLatCmd(g))
	return c
}

func newBwServeCmd(g *globals) *cobra.Command {
	f := &bwFlags{}
	var bind string
	var maxTests, maxConns int
	var maxTest time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve bw tests on this host's devices until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxTests < 1 || maxConns < 0 || maxTest <= 0 {
				return couldNotRun(fmt.Errorf("bw serve: --max-tests %d, --max-conns %d, --max-test %v: want at least 1 test, 0 (4 x max-tests) or more connections, a positive duration", maxTests, maxConns, maxTest))
			}
			links, closeAll, err := f.openLinks(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeAll()
			addr := net.JoinHostPort(bind, strconv.Itoa(f.port))
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("bw serve: %w", err)
			}
			names := make([]string, len(links))
			for i, l := range links {
				names[i] = l.Device()
			}
			fmt.Fprintf(g.stderr, "bw: serving %s on %s\n", strings.Join(names, ", "), ln.Addr())
			log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			srv := &perf.Server{Links: links, StepTimeout: f.stepTimeout, Logger: log, MaxTests: maxTests, MaxConns: maxConns, MaxTest: maxTest}
			return srv.Serve(cmd.Context(), ln)
		},
	}
	f.add(c, false)
	markUntilInterrupted(c)
	c.Flags().StringVar(&bind, "bind", "", "address to listen on (default: every address)")
	c.Flags().IntVar(&maxTests, "max-tests", perf.DefaultMaxTests, "tests running at once; a client asking for more is told the server is busy")
	c.Flags().IntVar(&maxConns, "max-conns", 0, "connections held at once (0: 4 x --max-tests); more are told the server is busy")
	c.Flags().DurationVar(&maxTest, "max-test", 10*time.Minute, "longest write phase a client may ask for")
	return c
}

func newBwRunCmd(g *globals) *cobra.Command {
	f := &bwFlags{}
	c := &cobra.Command{
		Use:   "run HOST[:PORT]",
		Short: "Write into a `bw serve` host from this host's devices",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, sizes, err := f.config(g)
			if err != nil {
				return err
			}
			addr := args[0]
			if _, _, err := net.SplitHostPort(addr); err != nil {
				addr = net.JoinHostPort(addr, strconv.Itoa(f.port))
			}
			links, closeAll, err := f.openLinks(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeAll()
			results, errs := perf.Clients{Links: links, Addr: addr, ServerDevice: f.serverDevice, Config: cfg}.Run(cmd.Context(), sizes)
			return f.report(cmd.Context(), g, links, f.serverDevice != "", results, errs)
		},
	}
	f.add(c, true)
	return c
}

func newBwLoopbackCmd(g *globals) *cobra.Command {
	f := &bwFlags{}
	c := &cobra.Command{
		Use:   "loopback",
		Short: "Server and client on this host: every device writes into itself, in parallel",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, sizes, err := f.config(g)
			if err != nil {
				return err
			}
			links, closeAll, err := f.openLinks(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeAll()
			results, errs := perf.Loopback(cmd.Context(), links, cfg, sizes)
			return f.report(cmd.Context(), g, links, false, results, errs)
		},
	}
	f.add(c, true)
	return c
}

// expectation is the total a test from links should reach: --expect-gbps,
// else the instance type's figure where it applies (doctor.ExpectedTestGbps:
// every eRDMA device, each into a peer NIC of its own; shared: every stream
// into one peer device), said on stderr with its source or why it does not
// apply. what names the command ("bw", "bw mesh").
func (f *bwFlags) expectation(ctx context.Context, g *globals, what string, links []perf.Link, shared bool) float64 {
	if f.expect != 0 || f.emulate != 0 {
		return f.expect
	}
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.Device()
	}
	return instanceExpectation(ctx, g, what, names, shared)
}

// instanceExpectation is doctor.ExpectedTestGbps for a test from devices on
// the host at --root, said on stderr.
func instanceExpectation(ctx context.Context, g *globals, what string, devices []string, shared bool) float64 {
	h, closer, err := erdma.OpenHost(ctx, g.root)
	if err != nil {
		return 0
	}
	defer closer.Close()
	gbps, why := doctor.ExpectedTestGbps(ctx, h, doctor.DefaultOptions(), devices, shared)
	switch {
	case gbps > 0:
		fmt.Fprintf(g.stderr, "%s: expecting %.0f Gbit/s in total (%s)\n", what, gbps, why)
	case why != "":
		fmt.Fprintf(g.stderr, "%s: no expectation: %s (give --expect-gbps)\n", what, why)
	}
	return gbps
}

// report prints the results and returns the exit code.
func (f *bwFlags) report(ctx context.Context, g *globals, links []perf.Link, shared bool, results []perf.Result, errs []error) error {
	rep := perf.NewReport(results, errs, f.expectation(ctx, g, "bw", links, shared))
	if f.plot != "" && len(results) > 0 {
		if err := writeSVG(f.plot, func(w io.Writer) error {
			return plot.Sweep(w, "erdmakit bw: RDMA write bandwidth", report.BandwidthOf(results))
		}); err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	printErrors(g, rep.Errors)
	return emit(g, rep, rep.Status, func() error { return report.WriteBandwidthTable(g.stdout, rep, g.tableOptions()) })
}

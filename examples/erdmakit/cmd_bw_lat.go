package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/plot"
	"github.com/erdmakit/erdmakit/report"
)

// latFlags are `bw lat`'s knobs (ib_write_lat's, where it has them).
type latFlags struct {
	bw       bwFlags // devices, ports, GID index, step timeout, emulation
	server   string  // --server-device
	size     string
	sizes    string
	iters    int
	warmup   int
	inline   int
	conn     connFlag
	expect   float64
	plot     string
	progress bool
	emulLat  time.Duration
}

func newBwLatCmd(g *globals) *cobra.Command {
	f := &latFlags{}
	c := &cobra.Command{
		Use:   "lat [HOST[:PORT]]",
		Short: "Measure RDMA write latency (ib_write_lat's ping-pong) against a `bw serve` host, or loopback",
		Long: `lat measures RDMA WRITE latency as ib_write_lat does: the client writes, the
server sees the last byte of its buffer change and writes back; each round
trip's half is one sample. With HOST it runs against 'bw serve' there; without,
each device pings itself (loopback). Reports min, median, average, stdev, p99,
p99.9 and max in microseconds. Exit: 0 ok, 1 a median above --expect-us,
2 a test failed, 3 bad usage.`,
		Args: cobra.MaximumNArgs(1),
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
			var (
				results []perf.LatencyResult
				errs    []error
			)
			if len(args) == 0 {
				results, errs = perf.LatencyLoopback(cmd.Context(), links, cfg, sizes)
			} else {
				addr := args[0]
				if _, _, err := net.SplitHostPort(addr); err != nil {
					addr = net.JoinHostPort(addr, strconv.Itoa(f.bw.port))
				}
				results, errs = perf.RunLatencyClients(cmd.Context(), links, addr, f.server, cfg, sizes)
			}
			return f.report(g, results, errs)
		},
	}
	f.bw.add(c, false)
	fl := c.Flags()
	fl.StringVar(&f.server, "server-device", "", "the server's device (default: from several devices each into the server's device of its name, from one the server's first; loopback: the same device)")
	fl.StringVarP(&f.size, "size", "s", strconv.Itoa(perf.DefaultLatencySize), "bytes per RDMA write (ib_write_lat's default 2; suffixes K, M)")
	fl.StringVar(&f.sizes, "sizes", "", "test these sizes, comma-separated (2,4K)")
	fl.IntVarP(&f.iters, "iters", "n", perf.DefaultLatencyIterations, fmt.Sprintf("measured round trips per size (at most %d)", perf.MaxLatencyIterations))
	fl.IntVar(&f.warmup, "warmup", perf.DefaultLatencyWarmup, "unmeasured round trips before them (0: none)")
	fl.IntVarP(&f.inline, "inline", "I", perf.InlineAuto, "max inline size in bytes (-1: ib_write_lat's choice, 96 on eRDMA, none on rxe)")
	f.conn.add(fl, "by the device's transport")
	fl.Float64Var(&f.expect, "expect-us", 0, "warn (exit 1) when a median one-way latency is above this many microseconds")
	fl.StringVar(&f.plot, "plot", "", "draw a histogram of the samples into this SVG file")
	fl.BoolVar(&f.progress, "progress", false, "print progress to stderr even when it is not a terminal")
	fl.DurationVar(&f.emulLat, "emulate-latency", 0, "with --emulate-gbps: the emulated device's one-way latency")
	return c
}

func (f *latFlags) config(g *globals) (perf.LatencyConfig, []int, error) {
	method, err := f.conn.get()
	if err != nil {
		return perf.LatencyConfig{}, nil, err
	}
	warmup := f.warmup
	if warmup == 0 {
		warmup = -1 // none (the library's zero means its default)
	}
	cfg := perf.LatencyConfig{Iterations: f.iters, Warmup: warmup, Inline: f.inline, Method: method, StepTimeout: f.bw.stepTimeout}
	if f.iters <= 0 {
		return cfg, nil, fmt.Errorf("--iters %d: want at least 1", f.iters)
	}
	var sizes []int
	list := f.size
	if f.sizes != "" {
		list = f.sizes
	}
	for _, s := range strings.Split(list, ",") {
		n, err := units.Parse(s, perf.MaxSize)
		if err != nil {
			return cfg, nil, err
		}
		sizes = append(sizes, int(n))
	}
	cfg.Size = sizes[0]
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	if f.progress || render.IsTerminal(g.stderr) {
		cfg.Progress = func(p perf.LatencyProgress) {
			fmt.Fprintf(g.stderr, "%-10s %8s  %6.1fs  %d/%d round trips  last %.2f us\n", p.Device, units.Format(int64(p.Size), units.Compact), p.Elapsed.Seconds(), p.Done, p.Iterations, p.LastUS)
		}
	}
	return cfg, sizes, nil
}

// openLinks opens the devices; --emulate-latency sets the emulated ones'.
func (f *latFlags) openLinks(ctx context.Context, g *globals) ([]perf.Link, func(), error) {
	if f.emulLat > 0 && f.bw.emulate == 0 {
		return nil, nil, fmt.Errorf("--emulate-latency needs --emulate-gbps")
	}
	f.bw.emulateLat = f.emulLat
	return f.bw.openLinks(ctx, g)
}

// report prints the results and returns the exit code.
func (f *latFlags) report(g *globals, results []perf.LatencyResult, errs []error) error {
	rep := perf.NewLatencyReport(results, errs, f.expect)
	if f.plot != "" && len(results) > 0 {
		if err := writeSVG(f.plot, func(w io.Writer) error {
			return plot.LatencyHistogram(w, "erdmakit bw lat: RDMA write latency", report.LatencyOf(results))
		}); err != nil {
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	printErrors(g, rep.Errors)
	return emit(g, rep, rep.Status, func() error { return report.WriteLatencyTable(g.stdout, rep, g.tableOptions()) })
}

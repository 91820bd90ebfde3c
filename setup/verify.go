package setup

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/shq"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/perf"
)

// Where the verify stage writes the NCCL environment.
const (
	DefaultEnvFile   = "/etc/erdmakit/nccl.env"
	DefaultGraphFile = "/etc/erdmakit/nccl-graph.xml"
)

// VerifyOptions tune the verify stage's measurements.
type VerifyOptions struct {
	// NoBandwidth skips bw loopback (and the peer).
	NoBandwidth bool
	// Devices are the devices bw loopback tests; empty: every eRDMA device
	// (perf.DefaultDevices).
	Devices []string
	// Config is bw's; the zero value means 64 KiB writes, 2 QPs, 2 s.
	Config perf.Config
	// Peer is an `erdmakit bw serve` ("host:port") to run bw against too.
	Peer string
	// EnvFile is the NCCL environment a job sources ("" DefaultEnvFile,
	// "-" none); GraphFile the NCCL graph with two NICs ("" DefaultGraphFile).
	EnvFile, GraphFile string
}

func (v VerifyOptions) config() perf.Config {
	c := v.Config
	if c.Size == 0 && c.Iterations == 0 && c.Duration == 0 {
		c = perf.Config{Size: 65536, QPs: 2, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond, Cooldown: 200 * time.Millisecond}
	}
	return c
}

// verifyMeasure measures what the doctor cannot: RDMA write bandwidth per
// device (loopback, and to a peer), and writes the NCCL environment.
func verifyMeasure(ctx context.Context, h erdma.Host, rep *erdma.Report, opt *Options, p *doctor.Plan, res *Result) error {
	v := opt.VerifyOptions
	if err := planNCCLEnv(ctx, h, rep, opt, p); err != nil {
		return err
	}
	if v.NoBandwidth {
		p.Notes = append(p.Notes, "bw loopback not run (asked not to)")
		return nil
	}
	devs := v.Devices
	if len(devs) == 0 {
		var err error
		if devs, err = perf.DefaultDevices(ctx, h.Root()); err != nil || len(devs) == 0 {
			p.Blocked = "no RDMA device to measure"
			if err != nil {
				p.Blocked += ": " + err.Error()
			}
			return nil
		}
	}
	what := "bw loopback on " + strings.Join(devs, ", ")
	if v.Peer != "" {
		what += "; bw run to " + v.Peer
	}
	if opt.DryRun {
		p.Notes = append(p.Notes, "then "+what)
		return nil
	}
	if !h.Live() {
		p.Notes = append(p.Notes, what+": not run on a recorded host")
		return nil
	}
	links, closer, err := perf.OpenVerbsLinks(ctx, devs, perf.VerbsOptions{Root: h.Root()})
	if err != nil {
		p.Blocked, p.Next = "bw loopback: "+err.Error(), "erdmakit bw loopback -v (the verbs probe: erdmakit doctor)"
		return nil
	}
	defer closer.Close()
	cfg := v.config()
	results, errs := perf.Loopback(ctx, links, cfg, nil)
	if v.Peer != "" && ctx.Err() == nil {
		r2, e2 := perf.Clients{Links: links, Addr: v.Peer, Config: cfg}.Run(ctx, nil)
		results, errs = append(results, r2...), append(errs, e2...)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	expect, _ := doctor.ExpectedTestGbps(ctx, h, opt.Doctor, devs, false)
	if v.Peer != "" {
		expect = 0 // the loopback and the peer runs add up to no one figure
	}
	bw := perf.NewReport(results, errs, expect)
	res.Bandwidth = bw
	for _, r := range results {
		proof := "device counters not read"
		if r.TX != nil && r.RX != nil {
			proof = "device counters moved by what was written"
			if !r.TX.OK || !r.RX.OK {
				proof = "device counters moved LESS than what was written"
			}
		}
		target := "loopback"
		if r.ServerDevice != "" && r.ServerDevice != r.Device {
			target = "to " + r.ServerDevice
		}
		p.Found = append(p.Found, fmt.Sprintf("bw %s %s: %.2f Gbit/s (%d x %d B, %s)", target, r.Device, r.AvgGbps, r.Messages, r.Size, proof))
	}
	if bw.Status == health.Fail {
		p.Blocked = "bw: " + strings.Join(bw.Errors, "; ")
		p.Next = "erdmakit bw loopback (and erdmakit doctor) on this host"
	} else if bw.Status == health.Warn {
		p.Notes = append(p.Notes, fmt.Sprintf("bandwidth below the instance type's %.0f Gbit/s", expect))
	}
	return nil
}

// planNCCLEnv plans the NCCL environment file (nccl env's advice) and, with
// two NICs, the graph file it names.
func planNCCLEnv(ctx context.Context, h erdma.Host, rep *erdma.Report, opt *Options, p *doctor.Plan) error {
	v := opt.VerifyOptions
	if v.EnvFile == "-" {
		return nil
	}
	envFile, graphFile := v.EnvFile, v.GraphFile
	if envFile == "" {
		envFile = DefaultEnvFile
	}
	if graphFile == "" {
		graphFile = DefaultGraphFile
	}
	a, _, err := doctor.NCCLEnv(ctx, h, rep.Host, opt.Doctor, nccl.EnvOptions{GraphFile: graphFile})
	if err != nil {
		return err
	}
	if _, ok := a.Get("NCCL_GRAPH_FILE"); ok && a.Graph != nil {
		var b bytes.Buffer
		if _, err := a.Graph.WriteTo(&b); err != nil {
			return err
		}
		if err := p.AddGenerated(&opt.Fix, []string{}, graphFile, b.Bytes(), "erdmakit nccl env --graph-file "+shq.Quote(graphFile)); err != nil {
			return err
		}
	}
	body := "# The NCCL environment for this host (erdmakit nccl env): `. " + envFile + "` in a job, or mpirun -x each\n" + a.Shell()
	return p.AddFile(&opt.Fix, []string{}, envFile, body, "nccl", true, 0o644)
}

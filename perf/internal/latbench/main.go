// Command latbench measures erdmakit's RDMA write latency (bw lat's
// ping-pong) side by side with perftest's ib_write_lat on the same device,
// in the same run: for each size, reps rounds of both tools (alternating
// which goes first), each with the same number of round trips, both in
// loopback (server and client on the device). It prints every run, the
// median latency of each tool, and the per-round ratios ours/ib_write_lat
// of the median one-way latency (lower is better for us: <= 1.00 is the
// goal), with their median and quartiles, the context switches of each
// tool's runs, and writes them as JSON to -out. With -go-loop a third tool
// runs in each round: erdmakit's ping-pong in Go (the loop bw lat ran on
// every device before it moved to C), so that one run shows what the C
// loop bought.
//
// The lab's guest slows down by about a third for tens of seconds at a time
// (docs/lab.md), so -steady (on by default) calibrates the machine between
// runs, as bwbench does, and keeps a round only when every run in it had
// calibrations of at least that fraction of the reference (the upper
// quartile) on both sides, judged again at the end against the final
// reference. -reps counts kept rounds and up to twice as many are run.
// Left-out rounds stay in the JSON, marked.
//
// In the lab's two-VM pair (-shell2: ERDMAKIT_LAB_ROLE a or b) it runs the
// same rounds across the two VMs instead: a serves (our bw server, and one
// ib_write_lat server per run of b's, each asked for on a control
// connection), b runs both clients against a and, when it is done, says so. With one
// vCPU per VM this compares the data paths; in loopback both ends of each
// tool share the one vCPU, and how each waits for its turn decides.
//
// The steadiest instrument is loopback in one VM with two vCPUs (labrun
// -smp 2): each end spins on a vCPU of its own, no network between VMs.
// There the tools' order matters by 1-2% when it rotates (a tool's
// neighbours stay the same), so -shuffle draws each round's order, and
// -control runs ib_write_lat a second time in every round: ours is then
// scored against the geometric mean of the two ib_write_lat runs, and the
// control against the first, which shows what the instrument can tell.
//
// `make bench-lat` (part of `make bench`) runs all three in the lab:
//
//	go build -o bin/latbench ./perf/internal/latbench
//	go run ./internal/lab/cmd/labrun -smp 2 -shell "$PWD/bin/latbench -reps 40 -iters 2000 -steady 0 -shuffle -control"
//	go run ./internal/lab/cmd/labrun -shell "$PWD/bin/latbench -reps 6"
//	go run ./internal/lab/cmd/labrun -shell2 "$PWD/bin/latbench -reps 4 -iters 300"
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/benchstat"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// sample is one run of one tool: its median one-way latency (t_typical for
// ib_write_lat) and its 99th percentile.
type sample struct {
	Tool     string  `json:"tool"` // "erdmakit", "ib_write_lat", "ib_write_lat again" (-control) or "erdmakit go-loop"
	Rep      int     `json:"rep"`
	MedianUS float64 `json:"median_us"`
	P99US    float64 `json:"p99_us"`
	// Switches is the context switches (voluntary and involuntary) during
	// the run: ours in this process (every thread; in loopback the
	// in-process server too), perftest's in its processes run here (in
	// loopback server and client; across the VMs the client).
	Switches int64  `json:"context_switches"`
	Err      string `json:"error,omitempty"`
	// Calibrations (benchstat.Calibrate, MB/s) just before and just after
	// the run (-steady); Disturbed marks every run of a round left out.
	CalibBefore float64 `json:"calibration_before_mbps,omitempty"`
	CalibAfter  float64 `json:"calibration_after_mbps,omitempty"`
	Disturbed   bool    `json:"disturbed,omitempty"`
}

// sizeResult is one size's runs, medians and ratios.
type sizeResult struct {
	Size     int      `json:"size"`
	Samples  []sample `json:"samples"`
	OursUS   float64  `json:"ours_median_us"`     // median over rounds
	TheirsUS float64  `json:"perftest_median_us"` // median over rounds
	Ratio    float64  `json:"ratio"`              // OursUS / TheirsUS
	// Rounds are each round's ours/ib_write_lat ratio of the median latency
	// (rounds in which a tool failed are left out); Paired their median and
	// quartiles.
	Rounds []float64        `json:"round_ratios"`
	Paired benchstat.Spread `json:"paired_ratio"`
	// With -control: each round's ratio of ours to the geometric mean of
	// the two ib_write_lat runs, and of the control (the second) to the
	// first; their medians and quartiles.
	RoundsMean    []float64        `json:"round_ratios_ours_both_perftest,omitempty"`
	PairedMean    benchstat.Spread `json:"paired_ratio_ours_both_perftest"`
	RoundsControl []float64        `json:"round_ratios_control,omitempty"`
	PairedControl benchstat.Spread `json:"paired_ratio_control"`
	ControlUS     float64          `json:"control_median_us,omitempty"`
	// P99US: each tool's 99th percentile, median over rounds.
	P99US map[string]float64 `json:"median_p99_us"`
	// With -go-loop: the Go loop's median over rounds, and each round's
	// ratio of the C loop's median latency to the Go loop's (< 1: C is
	// faster).
	GoUS     float64          `json:"go_loop_median_us,omitempty"`
	RoundsGo []float64        `json:"round_ratios_c_over_go,omitempty"`
	PairedGo benchstat.Spread `json:"paired_ratio_c_over_go"`
	// Switches: the median context switches per run of each tool.
	Switches map[string]float64 `json:"median_context_switches"`
	// RoundsRun counts every round; Disturbed are the rounds left out
	// (-steady), by number.
	RoundsRun int   `json:"rounds_run"`
	Disturbed []int `json:"disturbed_rounds,omitempty"`
}

type report struct {
	Mode   string       `json:"mode"` // "loopback" or "two VMs"
	Device string       `json:"device"`
	Iters  int          `json:"iters"`
	Reps   int          `json:"reps"`
	Steady float64      `json:"steady_fraction,omitempty"`
	Seed   uint64       `json:"shuffle_seed,omitempty"` // -shuffle: each round's order drawn from it
	Sizes  []sizeResult `json:"sizes"`
	Host   string       `json:"host"`
}

func main() {
	var (
		device   = flag.String("device", benchstat.EnvOr("ERDMAKIT_LAB_DEVICE", "rxe0"), "RDMA device")
		gid      = flag.Int("gid-index", benchstat.EnvInt("ERDMAKIT_LAB_GID_INDEX", -1), "GID index for both tools (-1: ours picks, perftest gets 1)")
		iters    = flag.Int("iters", perf.DefaultLatencyIterations, "round trips per run, both tools (ib_write_lat -n)")
		reps     = flag.Int("reps", 6, "rounds per size (each: ours and ib_write_lat, alternating who goes first)")
		sizesArg = flag.String("sizes", "2,4096", "message sizes")
		out      = flag.String("out", filepath.Join(benchstat.EnvOr("ERDMAKIT_LAB_OUT", os.TempDir()), "latbench.json"), "JSON report")
		binary   = flag.String("perftest", "ib_write_lat", "ib_write_lat program")
		role     = flag.String("role", benchstat.EnvOr("ERDMAKIT_LAB_ROLE", "single"), "single (loopback), a (serve), b (client of -peer)")
		peer     = flag.String("peer", os.Getenv("ERDMAKIT_LAB_PEER"), "the serving VM's address (role b)")
		goLoop   = flag.Bool("go-loop", false, "also run erdmakit's ping-pong in Go (as before it moved to C), as a third tool (both VMs: same flags)")
		steady   = flag.Float64("steady", 0.9, "keep a round only when the machine's calibration around each run is at least this fraction of its upper quartile; 0: keep every round, no calibration")
		calib    = flag.Duration("calibration", 250*time.Millisecond, "each calibration's length (-steady)")
		shuffle  = flag.Bool("shuffle", false, "draw each round's order of the tools at random (else it rotates)")
		seed     = flag.Uint64("seed", 0, "-shuffle's seed (0: from the clock; printed, and in the JSON)")
		control  = flag.Bool("control", false, "run ib_write_lat a second time in every round; score ours against both")
	)
	flag.Parse()
	// The in-process server logs every test at Info: one line per run, amid the table.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	perf.RaiseMaxProcs() // as the erdmakit CLI does
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sizes, err := benchstat.IntList(*sizesArg)
	if err != nil {
		fatal(fmt.Errorf("-sizes: %w", err))
	}
	if *steady < 0 || *steady >= 1 {
		fatal(fmt.Errorf("-steady %g: want a fraction in 0..1 (0: off)", *steady))
	}
	host, _ := os.Hostname()
	rep := report{Mode: "loopback", Device: *device, Iters: *iters, Reps: *reps, Steady: *steady, Host: host}
	link, err := perf.OpenVerbsLink(*device, perf.VerbsOptions{GIDIndex: *gid})
	if err != nil {
		fatal(err)
	}
	defer link.Close()
	gidIndex := *gid
	if gidIndex < 0 {
		gidIndex = 1 // rxe's first IPv4 RoCE v2 entry in the lab; pass -gid-index elsewhere
	}
	t := tools{link: link, binary: *binary, device: *device, gid: gidIndex, iters: *iters}
	switch *role {
	case "a":
		if err := serve(ctx, t, *goLoop); err != nil {
			fatal(err)
		}
		return
	case "b":
		if *peer == "" {
			fatal(fmt.Errorf("role b needs -peer"))
		}
		t.peer, rep.Mode = *peer, "two VMs"
		ctl, err := dialControl(ctx, *peer)
		if err != nil {
			fatal(err)
		}
		defer ctl.done()
		t.ctl = ctl
	}
	fmt.Printf("latbench: %s, %d round trips per run, %d rounds per size, %s, load average %s\n", *device, *iters, *reps, rep.Mode, benchstat.LoadAvg())
	maxRounds := 2 * *reps
	cal := benchstat.Calibrator{Frac: *steady, D: *calib}
	cal.Start()
	calBefore := cal.Take() // each run's calibration after it is the next run's before
	tools := []string{"erdmakit", "ib_write_lat"}
	if *control {
		tools = append(tools, controlTool)
	}
	if *goLoop {
		tools = append(tools, goTool)
	}
	order := rotate
	if *shuffle {
		if *seed == 0 {
			*seed = uint64(time.Now().UnixNano())
		}
		rep.Seed = *seed
		fmt.Printf("latbench: each round's order shuffled, seed %d\n", *seed)
		order = shuffler(*seed)
	}
	run := 0 // perftest runs so far: the two VMs number their ports alike
	for _, size := range sizes {
		sr := sizeResult{Size: size}
		kept := 0
		for r := 0; kept < *reps && r < maxRounds; r++ {
			from := len(sr.Samples)
			for _, tool := range order(tools, r) {
				var s sample
				switch tool {
				case "ib_write_lat", controlTool:
					before := benchstat.Switches(syscall.RUSAGE_CHILDREN)
					s = t.perftest(ctx, size, perftest.DefaultPort+run)
					s.Tool = tool
					s.Switches = benchstat.Switches(syscall.RUSAGE_CHILDREN) - before
					run++
				default:
					before := benchstat.Switches(syscall.RUSAGE_SELF)
					s = t.ours(ctx, size, tool == goTool)
					s.Switches = benchstat.Switches(syscall.RUSAGE_SELF) - before
				}
				s.Rep = r + 1
				s.CalibBefore, s.CalibAfter = calBefore, cal.Take()
				calBefore = s.CalibAfter
				fmt.Printf("  size %5d  round %2d  %-16s  median %9.2f us  p99 %9.2f us  %6d switches  calibration %.0f/%.0f MB/s  %s\n", size, s.Rep, s.Tool, s.MedianUS, s.P99US, s.Switches, s.CalibBefore, s.CalibAfter, s.Err)
				sr.Samples = append(sr.Samples, s)
			}
			sr.RoundsRun++
			if !benchstat.SteadyRound(sr.Samples[from:], sample.calibrations, cal.Steady) {
				fmt.Printf("  size %5d  round %2d  disturbed: a calibration below %.2f of the reference %.0f MB/s so far\n", size, r+1, cal.Frac, cal.Ref())
				continue
			}
			kept++
		}
		rep.Sizes = append(rep.Sizes, sr)
	}
	// Every round is judged again against the final reference: a round
	// run while the machine was slow from the start looked steady then.
	for i := range rep.Sizes {
		rep.Sizes[i].score(cal.Steady, tools)
	}
	fmt.Println()
	fmt.Printf("latbench: %s, %s UTC, load average %s\n", rep.Mode, time.Now().UTC().Format("2006-01-02 15:04"), benchstat.LoadAvg())
	fmt.Println("| size | erdmakit median us | ib_write_lat median us | ratio of the medians | per-round ratio: median (p25-p75), rounds | p99 us, median over rounds: erdmakit / ib_write_lat | context switches per run, median: erdmakit / ib_write_lat |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range rep.Sizes {
		fmt.Printf("| %d | %s | %s | %s | %s | %s / %s | %.0f / %.0f |\n", s.Size, benchstat.Figure(s.OursUS, 2), benchstat.Figure(s.TheirsUS, 2),
			benchstat.Figure(s.Ratio, 3), benchstat.Format(s.Paired, len(s.Rounds)),
			benchstat.Figure(s.P99US["erdmakit"], 2), benchstat.Figure(s.P99US["ib_write_lat"], 2),
			s.Switches["erdmakit"], s.Switches["ib_write_lat"])
	}
	if *control {
		fmt.Println()
		fmt.Println("| size | ib_write_lat again median us | ours / both ib_write_lat runs (geometric mean), per round | control / ib_write_lat, per round |")
		fmt.Println("|---:|---:|---:|---:|")
		for _, s := range rep.Sizes {
			fmt.Printf("| %d | %s | %s | %s |\n", s.Size, benchstat.Figure(s.ControlUS, 2), benchstat.Format(s.PairedMean, len(s.RoundsMean)),
				benchstat.Format(s.PairedControl, len(s.RoundsControl)))
		}
	}
	if cal.Frac > 0 {
		fmt.Println()
		fmt.Printf("Rounds kept (%s):\n", cal.Summary())
		for _, s := range rep.Sizes {
			fmt.Printf("  size %5d  %d of %d rounds kept; left out: %v\n", s.Size, s.RoundsRun-len(s.Disturbed), s.RoundsRun, s.Disturbed)
		}
	}
	if *goLoop {
		fmt.Println()
		fmt.Println("| size | erdmakit (C loop) median us | its Go loop median us | C / Go per round: median (p25-p75), rounds | Go loop's switches per run, median |")
		fmt.Println("|---:|---:|---:|---:|---:|")
		for _, s := range rep.Sizes {
			fmt.Printf("| %d | %s | %s | %s | %.0f |\n", s.Size, benchstat.Figure(s.OursUS, 2), benchstat.Figure(s.GoUS, 2), benchstat.Format(s.PairedGo, len(s.RoundsGo)), s.Switches[goTool])
		}
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "latbench:", err)
	} else {
		fmt.Println("latbench: wrote", *out)
	}
	failed := false
	for _, s := range rep.Sizes {
		if len(s.Rounds) == 0 {
			fmt.Fprintf(os.Stderr, "latbench: %d B: no ratio: %s\n", s.Size, benchstat.Unscored(s.RoundsRun, len(s.Disturbed)))
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// tools runs each tool once, in loopback or (peer set) against the peer.
type tools struct {
	link   perf.Link
	binary string
	device string
	gid    int
	iters  int
	peer   string
	ctl    *control // across the VMs: asks a for each ib_write_lat server
}

// goTool is erdmakit's ping-pong run in Go (-go-loop); controlTool is
// ib_write_lat's second run in a round (-control).
const (
	goTool      = "erdmakit go-loop"
	controlTool = "ib_write_lat again"
)

// rotate is round r's order of the tools without -shuffle: who goes
// first rotates.
func rotate(tools []string, r int) []string {
	out := make([]string, len(tools))
	for k := range tools {
		out[k] = tools[(r+k)%len(tools)]
	}
	return out
}

// shuffler draws each round's order from seed (-shuffle): with a rotating
// order each tool keeps the same neighbours, and they move it by 1-2% in
// the two-vCPU VM (docs/bw.md).
func shuffler(seed uint64) func(tools []string, r int) []string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(tools []string, _ int) []string {
		out := slices.Clone(tools)
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
}

// goOnly hides a link's native ping-pong: its sessions are only
// perf.PingSession, so perf runs the ping-pong in Go.
type goOnly struct{ perf.Link }

func (g goOnly) Open(ctx context.Context, cfg perf.OpenConfig) (perf.Session, error) {
	s, err := g.Link.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ps, ok := s.(perf.PingSession)
	if !ok {
		s.Close()
		return nil, fmt.Errorf("%s's sessions (%T) cannot ping", g.Device(), s)
	}
	return struct{ perf.PingSession }{ps}, nil
}

// goPort is where role a serves the Go loop's tests (-go-loop).
const goPort = perf.DefaultPort + 1

func (t tools) ours(ctx context.Context, size int, goLoop bool) sample {
	s := sample{Tool: "erdmakit"}
	link, port := t.link, perf.DefaultPort
	if goLoop {
		s.Tool, link, port = goTool, goOnly{t.link}, goPort
	}
	// No warm-up: ib_write_lat has none (it drops its two largest samples).
	cfg := perf.LatencyConfig{Iterations: t.iters, Warmup: -1}
	var (
		results []perf.LatencyResult
		errs    []error
	)
	if t.peer == "" {
		results, errs = perf.LatencyLoopback(ctx, []perf.Link{link}, cfg, []int{size})
	} else {
		addr := net.JoinHostPort(t.peer, strconv.Itoa(port))
		for try := 0; try < 60; try++ { // the peer's server may still be starting
			results, errs = perf.RunLatencyClients(ctx, []perf.Link{link}, addr, "", cfg, []int{size})
			if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "connect") {
				break
			}
			time.Sleep(time.Second)
		}
	}
	if len(errs) > 0 || len(results) != 1 {
		s.Err = fmt.Sprint(errs)
		return s
	}
	s.MedianUS, s.P99US = results[0].MedianUS, results[0].P99US
	return s
}

func (t tools) perftest(ctx context.Context, size, port int) sample {
	s := sample{Tool: "ib_write_lat"}
	if t.ctl != nil {
		if err := t.ctl.serve(size, port); err != nil {
			s.Err = err.Error()
			return s
		}
	}
	runs := perftest.RunWriteLat(ctx, perftest.Options{Binary: t.binary, Devices: []string{t.device}, Size: size, Iterations: t.iters,
		GIDIndex: t.gid, Port: port, Server: t.peer, Timeout: 10 * time.Minute, ConnectRetries: 60})
	r := runs[0]
	if r.Error != "" || r.Client == nil || len(r.Client.Latency) == 0 {
		s.Err = r.Error
		if s.Err == "" {
			s.Err = "no latency table in the client's output"
		}
		return s
	}
	x := r.Client.Latency[len(r.Client.Latency)-1]
	s.MedianUS, s.P99US = x.TypicalUS, x.P99US
	return s
}

// ctlPort is where role a takes b's requests for ib_write_lat servers.
const ctlPort = perf.DefaultPort + 2

// control is b's connection to a: one line per ib_write_lat server wanted
// ("lat SIZE PORT"), then "done".
type control struct{ conn net.Conn }

func dialControl(ctx context.Context, peer string) (*control, error) {
	addr := net.JoinHostPort(peer, strconv.Itoa(ctlPort))
	var d net.Dialer
	for try := 0; ; try++ { // a may still be starting
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return &control{conn}, nil
		}
		if try == 60 || ctx.Err() != nil {
			return nil, fmt.Errorf("control connection to %s: %w", addr, err)
		}
		time.Sleep(time.Second)
	}
}

func (c *control) serve(size, port int) error {
	_, err := fmt.Fprintf(c.conn, "lat %d %d\n", size, port)
	return err
}

func (c *control) done() {
	fmt.Fprintln(c.conn, "done")
	c.conn.Close()
}

// serve is role a: our bw server for every ping-pong of b (with -go-loop a
// second one, on goPort, whose sessions run the Go loop), and one
// ib_write_lat server for each that b asks for on the control connection,
// until b says done (or goes away).
func serve(ctx context.Context, t tools, goLoop bool) error {
	links := map[int]perf.Link{perf.DefaultPort: t.link}
	if goLoop {
		links[goPort] = goOnly{t.link}
	}
	ctlLn, err := net.Listen("tcp", ":"+strconv.Itoa(ctlPort))
	if err != nil {
		return err
	}
	defer ctlLn.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, len(links))
	for port, l := range links {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		srv := &perf.Server{Links: []perf.Link{l}, OnTest: func(st perf.ServerTest) {
			if st.Err != nil {
				fmt.Println("latbench: serving erdmakit:", st.Err)
			}
		}}
		go func() { served <- srv.Serve(sctx, ln) }()
	}
	defer context.AfterFunc(ctx, func() { ctlLn.Close() })() // Ctrl-C ends the wait for b
	conn, err := ctlLn.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	lines := bufio.NewScanner(conn)
	for lines.Scan() {
		var size, port int
		if lines.Text() == "done" {
			break
		}
		if _, err := fmt.Sscanf(lines.Text(), "lat %d %d", &size, &port); err != nil {
			return fmt.Errorf("control line %q: %w", lines.Text(), err)
		}
		runs := perftest.ServeWriteLat(ctx, perftest.Options{Binary: t.binary, Devices: []string{t.device}, Size: size,
			Iterations: t.iters, GIDIndex: t.gid, Port: port, Timeout: 10 * time.Minute})
		if runs[0].Error != "" {
			fmt.Println("latbench: serving ib_write_lat:", runs[0].Error)
		}
	}
	stop()
	var errs []error
	for range links {
		errs = append(errs, <-served)
	}
	return errors.Join(errs...)
}

// score judges every round again with steady (-steady: against the final
// reference), marks the disturbed ones, and scores the others: the
// per-round ratios and each tool's median.
func (sr *sizeResult) score(steady func(before, after float64) bool, tools []string) {
	var kept [][]sample
	kept, sr.Disturbed = benchstat.JudgeRounds(sr.Samples, sample.round, sample.calibrations, steady)
	for _, round := range kept {
		med := map[string]float64{}
		for _, s := range round {
			if s.Err == "" {
				med[s.Tool] = s.MedianUS
			}
		}
		if o, p := med["erdmakit"], med["ib_write_lat"]; o > 0 && p > 0 {
			sr.Rounds = append(sr.Rounds, o/p)
		}
		if o, g := med["erdmakit"], med[goTool]; o > 0 && g > 0 {
			sr.RoundsGo = append(sr.RoundsGo, o/g)
		}
		if o, p, c := med["erdmakit"], med["ib_write_lat"], med[controlTool]; p > 0 && c > 0 {
			sr.RoundsControl = append(sr.RoundsControl, c/p)
			if o > 0 {
				sr.RoundsMean = append(sr.RoundsMean, o/math.Sqrt(p*c))
			}
		}
	}
	for i, s := range sr.Samples {
		sr.Samples[i].Disturbed = slices.Contains(sr.Disturbed, s.Rep)
	}
	sr.Paired = benchstat.Quartiles(sr.Rounds)
	sr.PairedGo = benchstat.Quartiles(sr.RoundsGo)
	sr.PairedMean = benchstat.Quartiles(sr.RoundsMean)
	sr.PairedControl = benchstat.Quartiles(sr.RoundsControl)
	sr.ControlUS = medianOf(sr.Samples, controlTool)
	sr.P99US = map[string]float64{}
	for _, tool := range tools {
		sr.P99US[tool] = toolMedian(sr.Samples, tool, func(s sample) float64 { return s.P99US })
	}
	sr.OursUS, sr.TheirsUS = medianOf(sr.Samples, "erdmakit"), medianOf(sr.Samples, "ib_write_lat")
	sr.GoUS = medianOf(sr.Samples, goTool)
	if sr.TheirsUS > 0 {
		sr.Ratio = sr.OursUS / sr.TheirsUS
	}
	sr.Switches = map[string]float64{}
	for _, tool := range tools {
		sr.Switches[tool] = toolMedian(sr.Samples, tool, func(s sample) float64 { return float64(s.Switches) })
	}
}

// round is the run's round number.
func (s sample) round() int { return s.Rep }

// calibrations are a run's calibrations before and after it (-steady).
func (s sample) calibrations() (before, after float64) { return s.CalibBefore, s.CalibAfter }

// medianOf is tool's median latency over its good, steady runs.
func medianOf(ss []sample, tool string) float64 {
	return toolMedian(ss, tool, func(s sample) float64 { return s.MedianUS })
}

// toolMedian is the median of field over tool's runs that neither failed
// nor fell in a disturbed round.
func toolMedian(ss []sample, tool string, field func(sample) float64) float64 {
	var v []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" && !s.Disturbed {
			v = append(v, field(s))
		}
	}
	return benchstat.Median(v)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "latbench:", err)
	os.Exit(2)
}

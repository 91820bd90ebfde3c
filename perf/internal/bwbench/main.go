// Command bwbench measures erdmakit's RDMA write loop side by side with
// perftest's ib_write_bw on the same device, in the same run: for each size,
// reps rounds of both tools (alternating which goes first), with the same
// message size, QPs, TX depth and phases (a measured -duration between two
// -margin margins: perftest's -D duration+2*margin -f margin), both in
// loopback (server and client on the device). It prints every run, the
// medians with their ratio ours/perftest, and the per-round ratios (each
// round's two runs are minutes apart at most, so a noisy host moves both:
// the median of the per-round ratios is the steadier figure), and writes
// them as JSON to -out.
//
// The goal is stated against the better of perftest's two settings in each
// round, and the larger of two noisy runs favours perftest by itself. So
// -control (on by default) runs `ib_write_bw -l` a second time in every round
// and scores it exactly as ours: the control against the better of the other
// two. Identical tools score below 1.00 there by the noise alone; ours is as
// fast as perftest's best when it scores at least what the control does.
//
// The lab's guest slows down by about a third for tens of seconds at a time
// (the shared host under software emulation; every tool and a plain copy
// loop alike), and a round in which one tool ran slow scores that, not the
// tools. So -steady (on by default) calibrates the machine between runs
// (benchstat.Calibrate, a fixed copy and checksum) and keeps a round only
// when every run in it had calibrations on both sides of at least that
// fraction of the reference (benchstat.Calibrator: the upper quartile of
// the calibrations); -reps counts rounds kept against the reference so far,
// up to twice as many are run, and at the end every round is judged again
// against the final reference. Left-out rounds stay in the JSON, marked.
//
// Each tool's figure is its own count over its own window. -ruler (on by
// default) also measures every run the same way from outside: the device's
// good packets per second over the run's measured phase (ruler.go), and
// scores the rounds again by it. In the lab `ib_write_bw -l` at 64 KiB
// reports more than its packets show (docs/bw.md); the ruler's ratios are
// the fair ones.
//
// Under qemu -icount (labrun -icount) the guest's clock counts
// instructions: the host's load cannot move the figures, every run of a tool
// measures the same to 0.1%, and -steady 0 with a few rounds is enough.
//
// Ours runs in bwbench's own process (perf.Loopback on the link it holds),
// beside the ruler's thread. -ours-bin runs it as that erdmakit binary's
// `bw loopback --json` in a child process instead, as perftest runs: the
// check that sharing a process with the ruler costs ours nothing.
//
// `make bench` runs it in the lab (Soft-RoCE under qemu):
//
//	go build -o bin/bwbench ./perf/internal/bwbench
//	go run ./internal/lab/cmd/labrun -shell "$PWD/bin/bwbench -device rxe0"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/benchstat"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// sample is one run of one tool.
type sample struct {
	Tool string  `json:"tool"` // "erdmakit" or "ib_write_bw"
	Rep  int     `json:"rep"`
	Gbps float64 `json:"gbps"`
	Mpps float64 `json:"mpps"`
	// Switches is the context switches (voluntary and involuntary) of the
	// tool's processes during the run: ours in this process (every
	// thread, the in-process server included), perftest's server and
	// client (the children reaped in the run).
	Switches int64  `json:"context_switches"`
	Err      string `json:"error,omitempty"`
	// Calibrations (benchstat.Calibrate, MB/s) just before and just after
	// the run (-steady); Disturbed marks every run of a round left out.
	CalibBefore float64 `json:"calibration_before_mbps,omitempty"`
	CalibAfter  float64 `json:"calibration_after_mbps,omitempty"`
	Disturbed   bool    `json:"disturbed,omitempty"`
	// RulerPPS is the device's good packets per second over the run's
	// measured phase (-ruler; ruler.go), RulerSamples the samples in it,
	// RulerWindowS the time between its first and last, RulerDropped the
	// run's samples left out because their reads were slow.
	RulerPPS     float64 `json:"ruler_good_pps,omitempty"`
	RulerSamples int     `json:"ruler_samples,omitempty"`
	RulerWindowS float64 `json:"ruler_window_s,omitempty"`
	RulerDropped int     `json:"ruler_dropped,omitempty"`
	RulerErr     string  `json:"ruler_error,omitempty"`
}

// sizeResult is one QP count and size's runs, medians and ratios.
type sizeResult struct {
	QPs          int      `json:"qps"`
	Size         int      `json:"size"`
	TxDepth      int      `json:"tx_depth"` // per QP, both tools
	Samples      []sample `json:"samples"`
	OursGbps     float64  `json:"ours_gbps"`
	PerftestGbps float64  `json:"perftest_gbps"`
	OursMpps     float64  `json:"ours_mpps"`
	PerftestMpps float64  `json:"perftest_mpps"`
	RatioGbps    float64  `json:"ratio_gbps"` // ours / perftest (medians)
	RatioMpps    float64  `json:"ratio_mpps"`
	// Own are each round's ratios of the tools' own message rates (a
	// failed run's ratios are left out); Paired is the median and
	// quartiles of ours / ib_write_bw.
	Own    roundRatios      `json:"round_ratios_mpps"`
	Paired benchstat.Spread `json:"paired_ratio_mpps"`
	// Against perftest's best setting (-l post list) and against the better
	// of perftest's two settings in each round, when -post-list-peer > 0.
	PostListGbps   float64          `json:"perftest_post_list_gbps,omitempty"`
	PairedPostList benchstat.Spread `json:"paired_ratio_mpps_post_list"`
	PairedBest     benchstat.Spread `json:"paired_ratio_mpps_best_perftest"`
	// The control (-control): a second ib_write_bw -l run per round,
	// against the better of ib_write_bw and the first ib_write_bw -l, as
	// PairedBest scores ours; and ours against the control.
	ControlGbps          float64          `json:"control_gbps,omitempty"`
	PairedControlBest    benchstat.Spread `json:"paired_ratio_mpps_control_best_perftest"`
	PairedOursControl    benchstat.Spread `json:"paired_ratio_mpps_ours_control"`
	BetterSetting        string           `json:"better_setting,omitempty"` // the perftest setting of the higher median
	PairedBetterSetting  benchstat.Spread `json:"paired_ratio_mpps_better_setting"`
	RoundsBetterSettings int              `json:"rounds_better_setting,omitempty"`
	// RoundsRun counts every round; Disturbed are the rounds left out
	// (-steady), by number.
	RoundsRun int `json:"rounds_run"`
	// Ruler is the per-round ratios by the device's packet counters
	// (-ruler): one measure for every tool.
	Ruler     roundRatios `json:"ruler"`
	Disturbed []int       `json:"disturbed_rounds,omitempty"`
}

type report struct {
	Device   string       `json:"device"`
	QPs      []int        `json:"qps"`
	Duration string       `json:"duration"`
	Margin   string       `json:"margin"`
	InFlight int          `json:"in_flight_per_device"`
	Reps     int          `json:"reps"`
	Steady   float64      `json:"steady_fraction,omitempty"`
	Sizes    []sizeResult `json:"sizes"`
	Host     string       `json:"host"`
}

func main() {
	var (
		device   = flag.String("device", benchstat.EnvOr("ERDMAKIT_LAB_DEVICE", "rxe0"), "RDMA device")
		gid      = flag.Int("gid-index", benchstat.EnvInt("ERDMAKIT_LAB_GID_INDEX", -1), "GID index for both tools (-1: ours picks, perftest gets the same)")
		qpsArg   = flag.String("qps", "1,16", "queue pair counts (16: the guide's ib_write_bw -q 16)")
		plPeer   = flag.Int("post-list-peer", 32, "also run ib_write_bw with -l N (post lists, perftest's best setting); 0: not")
		duration = flag.Duration("duration", 2*time.Second, "measured time per run (whole seconds)")
		margin   = flag.Duration("margin", time.Second, "unmeasured time before and after it (whole seconds, perftest -f)")
		reps     = flag.Int("reps", 3, "rounds kept per size (each: every tool once, who goes first rotating; -steady runs up to twice as many)")
		sizesArg = flag.String("sizes", "65536,4096", "message sizes")
		out      = flag.String("out", filepath.Join(benchstat.EnvOr("ERDMAKIT_LAB_OUT", os.TempDir()), "bwbench.json"), "JSON report")
		binary   = flag.String("perftest", "ib_write_bw", "ib_write_bw program")
		postList = flag.Int("post-list", 0, "erdmakit's post list (0: auto)")
		cqMod    = flag.Int("cq-mod", 0, "CQ moderation for both (0: perftest's default)")
		goLoop   = flag.Bool("go-loop", false, "also run erdmakit's write loop in Go (as before the loop moved to C), as one more tool")
		control  = flag.Bool("control", true, "also run ib_write_bw -l a second time per round, scored as ours (with -post-list-peer > 0)")
		inFlight = flag.Int("outstanding", perf.DefaultTxDepth, "writes in flight per device, shared by its QPs: tx depth per QP = max(8, this/QPs), both tools")
		steady   = flag.Float64("steady", 0.9, "keep a round only when the machine's calibration around each run is at least this fraction of its upper quartile; 0: keep every round, no calibration")
		calib    = flag.Duration("calibration", 250*time.Millisecond, "each calibration's length (-steady)")
		useRuler = flag.Bool("ruler", true, "also score every run by the device's packet counters (rxe hw_counters), one ruler for every tool (ruler.go)")
		oursBin  = flag.String("ours-bin", "", "run ours as this erdmakit binary's `bw loopback` in a child process, as perftest runs, instead of in bwbench's own process (beside the ruler)")
	)
	flag.Parse()
	perf.RaiseMaxProcs() // as the erdmakit CLI does
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sizes, err := benchstat.IntList(*sizesArg)
	if err != nil {
		fatal(fmt.Errorf("-sizes: %w", err))
	}
	qpCounts, err := benchstat.IntList(*qpsArg)
	if err != nil {
		fatal(fmt.Errorf("-qps: %w", err))
	}
	var rul ruler
	if *useRuler {
		if rul, err = newRuler(ctx, *device, 1); err != nil {
			fatal(fmt.Errorf("%w (-ruler=false runs without it)", err))
		}
	}
	host, _ := os.Hostname()
	if *duration < time.Second || *margin < time.Second || *duration%time.Second != 0 || *margin%time.Second != 0 {
		fatal(fmt.Errorf("-duration %s, -margin %s: want whole seconds, at least 1 (perftest's units)", *duration, *margin))
	}
	if *steady < 0 || *steady >= 1 {
		fatal(fmt.Errorf("-steady %g: want a fraction in 0..1 (0: off)", *steady))
	}
	rep := report{Device: *device, QPs: qpCounts, Duration: duration.String(), Margin: margin.String(), InFlight: *inFlight, Reps: *reps, Steady: *steady, Host: host}
	cal := benchstat.Calibrator{Frac: *steady, D: *calib}
	cal.Start()
	calBefore := cal.Take() // each run's calibration after it is the next run's before
	link, err := perf.OpenVerbsLink(*device, perf.VerbsOptions{GIDIndex: *gid})
	if err != nil {
		fatal(err)
	}
	defer link.Close()
	gidIndex := *gid
	if gidIndex < 0 {
		gidIndex = 1 // rxe's first IPv4 RoCE v2 entry in the lab; pass -gid-index elsewhere
	}
	// perftest refuses a post list longer than the send queue: with
	// 16 QPs of depth 8 the post-list run posts lists of 8.
	fmt.Printf("bwbench: %s, QPs %v, %s measured between %s margins, %d writes in flight per device (tx depth per QP: %d / QPs, at least 8), %d rounds per QP count and size\n", *device, qpCounts, *duration, *margin, *inFlight, *inFlight, *reps)
	for _, qps := range qpCounts {
		for _, size := range sizes {
			// The lab's link runs at ~0.4 Gbit/s: 16 QPs at perftest's
			// default depth (16 x 128 x 64 KiB = 128 MiB in flight) do
			// not drain within the measured window, and ib_write_bw
			// reports 0 iterations. Sharing one device's depth among its
			// QPs keeps what is in flight the 1-QP case's.
			depth := max(8, *inFlight/qps)
			sr := sizeResult{QPs: qps, Size: size, TxDepth: depth}
			tools := []string{"erdmakit", "ib_write_bw"}
			if *plPeer > 0 {
				tools = append(tools, plTool)
			}
			if *goLoop {
				tools = append(tools, goTool)
			}
			if *control && *plPeer > 0 {
				tools = append(tools, controlTool)
			}
			kept := 0
			for r := 0; kept < *reps && r < 2**reps; r++ {
				from := len(sr.Samples)
				for k := range tools {
					tool := tools[(r+k)%len(tools)] // who goes first rotates
					var s sample
					var measured <-chan rulerResult
					done := make(chan struct{})
					if *useRuler {
						measured = rul.start(ctx, *margin, done)
					}
					switch tool {
					case "erdmakit":
						if *oursBin != "" {
							before := benchstat.Switches(syscall.RUSAGE_CHILDREN)
							s = runOursProcess(ctx, *oursBin, *device, *gid, size, qps, depth, *duration, *margin, *postList, *cqMod)
							s.Switches = benchstat.Switches(syscall.RUSAGE_CHILDREN) - before
							break
						}
						before := benchstat.Switches(syscall.RUSAGE_SELF)
						s = runOurs(ctx, link, size, qps, depth, *duration, *margin, *postList, *cqMod)
						s.Switches = benchstat.Switches(syscall.RUSAGE_SELF) - before
					case "ib_write_bw":
						before := benchstat.Switches(syscall.RUSAGE_CHILDREN)
						s = runPerftest(ctx, *binary, *device, gidIndex, size, qps, depth, *duration, *margin, *cqMod, 0)
						s.Switches = benchstat.Switches(syscall.RUSAGE_CHILDREN) - before
					case goTool:
						before := benchstat.Switches(syscall.RUSAGE_SELF)
						s = runOurs(ctx, goOnly{link}, size, qps, depth, *duration, *margin, *postList, *cqMod)
						s.Switches = benchstat.Switches(syscall.RUSAGE_SELF) - before
						s.Tool = goTool
					default: // plTool, and controlTool: the same run again
						before := benchstat.Switches(syscall.RUSAGE_CHILDREN)
						s = runPerftest(ctx, *binary, *device, gidIndex, size, qps, depth, *duration, *margin, *cqMod, min(*plPeer, depth))
						s.Switches = benchstat.Switches(syscall.RUSAGE_CHILDREN) - before
						s.Tool = tool
					}
					close(done)
					if measured != nil {
						m := <-measured
						s.RulerPPS, s.RulerSamples = m.PPS, m.Samples
						s.RulerWindowS, s.RulerDropped = m.Window.Seconds(), m.Dropped
						if m.Err != nil {
							s.RulerErr = m.Err.Error()
						}
					}
					s.Rep = r + 1
					s.CalibBefore, s.CalibAfter = calBefore, cal.Take()
					calBefore = s.CalibAfter
					fmt.Printf("  qps %2d  size %7d  round %2d  %-20s  %8.4f Gbit/s  %8.5f Mpps  %6d switches  calibration %s  ruler %s  %s\n", qps, size, s.Rep, s.Tool, s.Gbps, s.Mpps, s.Switches, calibration(&cal, s), rulerText(s), s.Err)
					sr.Samples = append(sr.Samples, s)
				}
				sr.RoundsRun++
				if !benchstat.SteadyRound(sr.Samples[from:], sample.calibrations, cal.Steady) {
					fmt.Printf("  qps %2d  size %7d  round %2d  disturbed: a calibration below %.2f of the reference %.0f MB/s so far\n", qps, size, r+1, cal.Frac, cal.Ref())
					continue
				}
				kept++
			}
			rep.Sizes = append(rep.Sizes, sr)
		}
	}
	// Every round is judged again against the final reference: a round
	// run while the machine was slow from the start looked steady then.
	for i := range rep.Sizes {
		rep.Sizes[i].score(cal.Steady, *plPeer > 0)
	}
	fmt.Println()
	fmt.Printf("bwbench: %s UTC, load average %s\n", time.Now().UTC().Format("2006-01-02 15:04"), benchstat.LoadAvg())
	fmt.Println("| QPs | size | context switches per run, median: erdmakit / ib_write_bw / ib_write_bw -l [/ erdmakit's Go loop] |")
	fmt.Println("|---:|---:|---:|")
	for _, s := range rep.Sizes {
		goCol := ""
		if *goLoop {
			goCol = fmt.Sprintf(" / %.0f", medianSwitches(s.Samples, goTool))
		}
		fmt.Printf("| %d | %d | %.0f / %.0f / %.0f%s |\n", s.QPs, s.Size, medianSwitches(s.Samples, "erdmakit"),
			medianSwitches(s.Samples, "ib_write_bw"), medianSwitches(s.Samples, plTool), goCol)
		if *goLoop {
			r := pairedRatios(s.Samples, "erdmakit", goTool)
			g := pairedRatios(s.Samples, goTool, "ib_write_bw")
			gbps, _ := medians(s.Samples, goTool)
			fmt.Printf("|   |   | Go loop %.4f Gbit/s; per round, C loop / Go loop: %s; Go loop / ib_write_bw: %s |\n", gbps,
				benchstat.Format(benchstat.Quartiles(r), len(r)), benchstat.Format(benchstat.Quartiles(g), len(g)))
		}
	}
	fmt.Println()
	fmt.Printf("| QPs | size | tx depth | erdmakit Gbit/s | ib_write_bw Gbit/s | %s min(%d, tx depth) Gbit/s | per-round ratio vs ib_write_bw: median (p25-p75), rounds | vs %s | vs the better perftest |\n", plTool, *plPeer, plTool)
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range rep.Sizes {
		fmt.Printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s |\n", s.QPs, s.Size, s.TxDepth,
			benchstat.Figure(s.OursGbps, 4), benchstat.Figure(s.PerftestGbps, 4), benchstat.Figure(s.PostListGbps, 4),
			benchstat.Format(s.Paired, len(s.Own.Perftest)), benchstat.Format(s.PairedPostList, len(s.Own.PostList)), benchstat.Format(s.PairedBest, len(s.Own.Best)))
	}
	fmt.Println()
	fmt.Println("| QPs | size | ours / the better perftest setting (by median), per round | ours / the better perftest in each round | control / the better of the other two in each round | ours / control |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	for _, s := range rep.Sizes {
		fmt.Printf("| %d | %d | %s: %s | %s | %s | %s |\n", s.QPs, s.Size, s.BetterSetting, benchstat.Format(s.PairedBetterSetting, s.RoundsBetterSettings),
			benchstat.Format(s.PairedBest, len(s.Own.Best)), benchstat.Format(s.PairedControlBest, len(s.Own.ControlBest)),
			benchstat.Format(s.PairedOursControl, len(s.Own.OursControl)))
	}
	if *useRuler {
		fmt.Println()
		fmt.Println("By the ruler (the device's good packets per second over each run's measured phase, the same for every tool), per round:")
		fmt.Println()
		fmt.Println("| QPs | size | ours / ib_write_bw | ours / ib_write_bw -l | ours / the better perftest in each round | control / the better of the other two | ours / control |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
		for _, s := range rep.Sizes {
			r := s.Ruler
			fmt.Printf("| %d | %d | %s | %s | %s | %s | %s |\n", s.QPs, s.Size, spread(r.Perftest), spread(r.PostList), spread(r.Best), spread(r.ControlBest), spread(r.OursControl))
		}
	}
	if cal.Frac > 0 {
		fmt.Println()
		fmt.Printf("Rounds kept (%s):\n", cal.Summary())
		for _, s := range rep.Sizes {
			fmt.Printf("  qps %2d  size %7d  %d of %d rounds kept; left out: %v\n", s.QPs, s.Size, s.RoundsRun-len(s.Disturbed), s.RoundsRun, s.Disturbed)
		}
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bwbench:", err)
	} else {
		fmt.Println("bwbench: wrote", *out)
	}
	failed := false
	for _, s := range rep.Sizes {
		if s.RatioGbps == 0 {
			fmt.Fprintf(os.Stderr, "bwbench: %d QPs, %d B: no ratio: %s\n", s.QPs, s.Size, benchstat.Unscored(s.RoundsRun, len(s.Disturbed)))
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// score judges every round again with steady (-steady: against the final
// reference), marks the disturbed ones, and scores the others: the
// per-round ratios, the medians and the better perftest setting.
func (sr *sizeResult) score(steady func(before, after float64) bool, postList bool) {
	var kept [][]sample
	kept, sr.Disturbed = benchstat.JudgeRounds(sr.Samples, sample.round, sample.calibrations, steady)
	sr.Own, sr.Ruler = roundRatios{}, roundRatios{}
	for _, round := range kept {
		mpps, pps := map[string]float64{}, map[string]float64{}
		for _, s := range round {
			if s.Err == "" {
				mpps[s.Tool] = s.Mpps
				pps[s.Tool] = s.RulerPPS
			}
		}
		sr.Own.add(mpps)
		sr.Ruler.add(pps)
	}
	for i, s := range sr.Samples {
		sr.Samples[i].Disturbed = slices.Contains(sr.Disturbed, s.Rep)
	}
	sr.Paired = benchstat.Quartiles(sr.Own.Perftest)
	sr.PairedControlBest = benchstat.Quartiles(sr.Own.ControlBest)
	sr.PairedOursControl = benchstat.Quartiles(sr.Own.OursControl)
	sr.ControlGbps, _ = medians(sr.Samples, controlTool)
	sr.PairedPostList = benchstat.Quartiles(sr.Own.PostList)
	sr.PairedBest = benchstat.Quartiles(sr.Own.Best)
	var plMpps float64
	sr.PostListGbps, plMpps = medians(sr.Samples, plTool)
	sr.OursGbps, sr.OursMpps = medians(sr.Samples, "erdmakit")
	sr.PerftestGbps, sr.PerftestMpps = medians(sr.Samples, "ib_write_bw")
	if sr.PerftestGbps > 0 {
		sr.RatioGbps = sr.OursGbps / sr.PerftestGbps
	}
	if sr.PerftestMpps > 0 {
		sr.RatioMpps = sr.OursMpps / sr.PerftestMpps
	}
	// The better setting is the one of the higher median message
	// rate over all rounds; ours is then paired with it per round.
	sr.BetterSetting, sr.PairedBetterSetting, sr.RoundsBetterSettings = "ib_write_bw", sr.Paired, len(sr.Own.Perftest)
	if postList && plMpps > sr.PerftestMpps {
		sr.BetterSetting, sr.PairedBetterSetting, sr.RoundsBetterSettings = plTool, sr.PairedPostList, len(sr.Own.PostList)
	}
}

// roundRatios are the per-round ratios of one rate (the tools' own message
// rates, or the ruler's good packets per second): ours against each perftest
// setting and the better of the two, and the control as ours.
type roundRatios struct {
	Perftest    []float64 `json:"ours_perftest"`
	PostList    []float64 `json:"ours_post_list"`
	Best        []float64 `json:"ours_best_perftest"`
	ControlBest []float64 `json:"control_best_perftest"`
	OursControl []float64 `json:"ours_control"`
}

// add scores one round's rates by tool (a failed run is absent).
func (rr *roundRatios) add(rate map[string]float64) {
	o, p, l, c := rate["erdmakit"], rate["ib_write_bw"], rate[plTool], rate[controlTool]
	b := max(p, l)
	rr.Perftest = appendRatio(rr.Perftest, o, p)
	rr.PostList = appendRatio(rr.PostList, o, l)
	rr.Best = appendRatio(rr.Best, o, b)
	rr.ControlBest = appendRatio(rr.ControlBest, c, b)
	rr.OursControl = appendRatio(rr.OursControl, o, c)
}

// appendRatio appends a / b where both tools ran.
func appendRatio(v []float64, a, b float64) []float64 {
	if a > 0 && b > 0 {
		return append(v, a/b)
	}
	return v
}

func runOurs(ctx context.Context, link perf.Link, size, qps, depth int, d, margin time.Duration, postList, cqMod int) sample {
	s := sample{Tool: "erdmakit"}
	cfg := perf.Config{Size: size, QPs: qps, TxDepth: depth, Duration: d, Warmup: margin, Cooldown: margin,
		PostList: postList, CQMod: cqMod}
	results, errs := perf.Loopback(ctx, []perf.Link{link}, cfg, nil)
	if len(errs) > 0 || len(results) != 1 {
		s.Err = fmt.Sprint(errs)
		return s
	}
	s.Gbps, s.Mpps = results[0].AvgGbps, results[0].Mpps
	return s
}

// runOursProcess runs ours as bin's `bw loopback` in a child process of its
// own, so that nothing of bwbench (the ruler's thread, its Go runtime) shares
// ours' process, as nothing shares perftest's.
func runOursProcess(ctx context.Context, bin, dev string, gid, size, qps, depth int, d, margin time.Duration, postList, cqMod int) sample {
	s := sample{Tool: "erdmakit"}
	args := []string{"bw", "loopback", "--json", "-d", dev, "-x", strconv.Itoa(gid), "-q", strconv.Itoa(qps),
		"-t", strconv.Itoa(depth), "-s", strconv.Itoa(size), "-D", d.String(), "--warmup", margin.String(),
		"--cooldown", margin.String()}
	if postList > 0 {
		args = append(args, "-l", strconv.Itoa(postList))
	}
	if cqMod > 0 {
		args = append(args, "-Q", strconv.Itoa(cqMod))
	}
	ctx, cancel := context.WithTimeout(ctx, d+2*margin+90*time.Second)
	defer cancel()
	stdout, err := execx.Output(ctx, bin, args...)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	var rep perf.Report // the schema of `bw --json`
	if err := json.Unmarshal(stdout, &rep); err != nil || len(rep.Results) != 1 {
		s.Err = fmt.Sprintf("%s: reading its JSON: %v (%d results)", bin, err, len(rep.Results))
		return s
	}
	s.Gbps, s.Mpps = rep.Results[0].AvgGbps, rep.Results[0].Mpps
	return s
}

// runPerftest runs ib_write_bw with the same phases as ours: perftest's -D is
// the whole run and it measures -D minus the two -f margins.
func runPerftest(ctx context.Context, bin, dev string, gid, size, qps, depth int, d, margin time.Duration, cqMod, postList int) sample {
	s := sample{Tool: "ib_write_bw"}
	extra := []string{"-f", strconv.Itoa(int(margin / time.Second)), "-t", strconv.Itoa(depth)}
	if cqMod > 0 {
		extra = append(extra, "-Q", strconv.Itoa(cqMod))
	}
	if postList > 0 {
		extra = append(extra, "-l", strconv.Itoa(postList))
	}
	total := d + 2*margin
	runs := perftest.RunWriteBW(ctx, perftest.Options{Binary: bin, Devices: []string{dev}, QPs: qps, Size: size,
		Duration: total, GIDIndex: gid, Port: perftest.DefaultPort, Timeout: total + 90*time.Second, Extra: extra,
		MBPerSec: true}) // Gb/sec has two decimals: 2% steps at rxe's 0.47 Gbit/s
	r := runs[0]
	if r.Error != "" || r.Client == nil || len(r.Client.Results) == 0 {
		s.Err = r.Error
		if s.Err == "" {
			s.Err = "no result in the client's output"
		}
		return s
	}
	x := r.Client.Results[len(r.Client.Results)-1]
	if x.MsgRateMpps <= 0 {
		s.Err = "the client reported no messages"
		return s
	}
	s.Gbps, s.Mpps = x.BWAvgGbps, x.MsgRateMpps
	return s
}

func medians(ss []sample, tool string) (gbps, mpps float64) {
	var g, m []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" && !s.Disturbed {
			g, m = append(g, s.Gbps), append(m, s.Mpps)
		}
	}
	return benchstat.Median(g), benchstat.Median(m)
}

// goTool is erdmakit's write loop run in Go (-go-loop).
const goTool = "erdmakit go-loop"

// plTool is ib_write_bw with post lists (-post-list-peer), perftest's best
// setting; controlTool is its second run in a round (-control).
const (
	plTool      = "ib_write_bw -l"
	controlTool = "ib_write_bw -l again"
)

// goOnly hides a link's native write loop: its sessions are only
// perf.Session, so the engine runs the loop in Go.
type goOnly struct{ perf.Link }

func (g goOnly) Open(ctx context.Context, cfg perf.OpenConfig) (perf.Session, error) {
	s, err := g.Link.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return struct{ perf.Session }{s}, nil
}

// pairedRatios is a's message rate over b's in each round both ran.
func pairedRatios(ss []sample, a, b string) []float64 {
	ra, rb := map[int]float64{}, map[int]float64{}
	for _, s := range ss {
		if s.Err != "" || s.Disturbed {
			continue
		}
		switch s.Tool {
		case a:
			ra[s.Rep] = s.Mpps
		case b:
			rb[s.Rep] = s.Mpps
		}
	}
	var r []float64
	for rep, x := range ra {
		if y := rb[rep]; y > 0 {
			r = append(r, x/y)
		}
	}
	return r
}

func medianSwitches(ss []sample, tool string) float64 {
	var v []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" && !s.Disturbed {
			v = append(v, float64(s.Switches))
		}
	}
	return benchstat.Median(v)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bwbench:", err)
	os.Exit(2)
}

// round is the run's round number.
func (s sample) round() int { return s.Rep }

// calibrations are a run's calibrations before and after it (-steady).
func (s sample) calibrations() (before, after float64) { return s.CalibBefore, s.CalibAfter }

// spread is benchstat.Format of v's quartiles.
func spread(v []float64) string { return benchstat.Format(benchstat.Quartiles(v), len(v)) }

func rulerText(s sample) string {
	switch {
	case s.RulerErr != "":
		return "(" + s.RulerErr + ")"
	case s.RulerPPS == 0:
		return "off"
	}
	return fmt.Sprintf("%.0f pkt/s (%d samples over %.2f s, %d slow left out)", s.RulerPPS, s.RulerSamples, s.RulerWindowS, s.RulerDropped)
}

func calibration(c *benchstat.Calibrator, s sample) string {
	if c.Frac <= 0 {
		return "off"
	}
	return fmt.Sprintf("%.0f/%.0f MB/s", s.CalibBefore, s.CalibAfter)
}

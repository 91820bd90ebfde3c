// Command latbench measures erdmakit's RDMA write latency (bw lat's
// ping-pong) side by side with perftest's ib_write_lat on the same device,
// in the same run: for each size, reps rounds of both tools (alternating
// which goes first), each with the same number of round trips, both in
// loopback (server and client on the device). It prints every run, the
// median latency of each tool, and the per-round ratios ours/ib_write_lat
// of the median one-way latency (lower is better for us: <= 1.00 is the
// goal), with their median and quartiles, and writes them as JSON to -out.
//
// `make bench-lat` (part of `make bench`) runs it in the lab:
//
//	go build -o bin/latbench ./perf/internal/latbench
//	go run ./internal/lab/cmd/labrun -shell "$PWD/bin/latbench -reps 6"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// sample is one run of one tool: its median one-way latency (t_typical for
// ib_write_lat) and its 99th percentile.
type sample struct {
	Tool     string  `json:"tool"` // "erdmakit" or "ib_write_lat"
	Rep      int     `json:"rep"`
	MedianUS float64 `json:"median_us"`
	P99US    float64 `json:"p99_us"`
	Err      string  `json:"error,omitempty"`
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
	Rounds []float64 `json:"round_ratios"`
	Paired spread    `json:"paired_ratio"`
}

type spread struct {
	Median float64 `json:"median"`
	P25    float64 `json:"p25"`
	P75    float64 `json:"p75"`
}

type report struct {
	Device string       `json:"device"`
	Iters  int          `json:"iters"`
	Reps   int          `json:"reps"`
	Sizes  []sizeResult `json:"sizes"`
	Host   string       `json:"host"`
}

func main() {
	var (
		device   = flag.String("device", envOr("ERDMAKIT_LAB_DEVICE", "rxe0"), "RDMA device")
		gid      = flag.Int("gid-index", envInt("ERDMAKIT_LAB_GID_INDEX", -1), "GID index for both tools (-1: ours picks, perftest gets 1)")
		iters    = flag.Int("iters", perf.DefaultLatencyIterations, "round trips per run, both tools (ib_write_lat -n)")
		reps     = flag.Int("reps", 6, "rounds per size (each: ours and ib_write_lat, alternating who goes first)")
		sizesArg = flag.String("sizes", "2,4096", "message sizes")
		out      = flag.String("out", filepath.Join(envOr("ERDMAKIT_LAB_OUT", os.TempDir()), "latbench.json"), "JSON report")
		binary   = flag.String("perftest", "ib_write_lat", "ib_write_lat program")
	)
	flag.Parse()
	perf.RaiseMaxProcs() // as the erdmakit CLI does
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sizes, err := intList(*sizesArg)
	if err != nil {
		fatal(fmt.Errorf("-sizes: %w", err))
	}
	host, _ := os.Hostname()
	rep := report{Device: *device, Iters: *iters, Reps: *reps, Host: host}
	link, err := perf.OpenVerbsLink(*device, perf.VerbsOptions{GIDIndex: *gid})
	if err != nil {
		fatal(err)
	}
	defer link.Close()
	gidIndex := *gid
	if gidIndex < 0 {
		gidIndex = 1 // rxe's first IPv4 RoCE v2 entry in the lab; pass -gid-index elsewhere
	}
	fmt.Printf("latbench: %s, %d round trips per run, %d rounds per size, loopback\n", *device, *iters, *reps)
	for _, size := range sizes {
		sr := sizeResult{Size: size}
		for r := 0; r < *reps; r++ {
			med := map[string]float64{}
			for k := range 2 {
				var s sample
				if (r+k)%2 == 0 {
					s = runOurs(ctx, link, size, *iters)
				} else {
					s = runPerftest(ctx, *binary, *device, gidIndex, size, *iters)
				}
				s.Rep = r + 1
				fmt.Printf("  size %5d  round %2d  %-12s  median %9.2f us  p99 %9.2f us  %s\n", size, s.Rep, s.Tool, s.MedianUS, s.P99US, s.Err)
				sr.Samples = append(sr.Samples, s)
				if s.Err == "" {
					med[s.Tool] = s.MedianUS
				}
			}
			if o, p := med["erdmakit"], med["ib_write_lat"]; o > 0 && p > 0 {
				sr.Rounds = append(sr.Rounds, o/p)
			}
		}
		sr.Paired = quartiles(sr.Rounds)
		sr.OursUS, sr.TheirsUS = medianOf(sr.Samples, "erdmakit"), medianOf(sr.Samples, "ib_write_lat")
		if sr.TheirsUS > 0 {
			sr.Ratio = sr.OursUS / sr.TheirsUS
		}
		rep.Sizes = append(rep.Sizes, sr)
	}
	fmt.Println()
	fmt.Println("| size | erdmakit median us | ib_write_lat median us | ratio of the medians | per-round ratio: median (p25-p75), rounds |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	for _, s := range rep.Sizes {
		fmt.Printf("| %d | %.2f | %.2f | %.3f | %s |\n", s.Size, s.OursUS, s.TheirsUS, s.Ratio, fmtSpread(s.Paired, len(s.Rounds)))
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "latbench:", err)
	} else {
		fmt.Println("latbench: wrote", *out)
	}
	for _, s := range rep.Sizes {
		if len(s.Rounds) == 0 {
			os.Exit(1) // a tool produced no figure
		}
	}
}

func runOurs(ctx context.Context, link perf.Link, size, iters int) sample {
	s := sample{Tool: "erdmakit"}
	// No warm-up: ib_write_lat has none (it drops its two largest samples).
	cfg := perf.LatencyConfig{Iterations: iters, Warmup: -1}
	results, errs := perf.LatencyLoopback(ctx, []perf.Link{link}, cfg, []int{size})
	if len(errs) > 0 || len(results) != 1 {
		s.Err = fmt.Sprint(errs)
		return s
	}
	s.MedianUS, s.P99US = results[0].MedianUS, results[0].P99US
	return s
}

func runPerftest(ctx context.Context, bin, dev string, gid, size, iters int) sample {
	s := sample{Tool: "ib_write_lat"}
	runs := perftest.RunWriteLat(ctx, perftest.Options{Binary: bin, Devices: []string{dev}, Size: size, Iterations: iters,
		GIDIndex: gid, Port: perftest.DefaultPort, Timeout: 5 * time.Minute})
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

func medianOf(ss []sample, tool string) float64 {
	var v []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" {
			v = append(v, s.MedianUS)
		}
	}
	return quantile(v, 0.5)
}

// intList parses "2,4096".
func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want positive integers, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// fmtSpread is "0.998 (0.990-1.004), 6", or "-" without rounds.
func fmtSpread(s spread, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f), %d", s.Median, s.P25, s.P75, n)
}

func quartiles(v []float64) spread {
	return spread{Median: quantile(v, 0.5), P25: quantile(v, 0.25), P75: quantile(v, 0.75)}
}

// quantile is the q-quantile of v by linear interpolation between the
// closest ranks (0 for no values); v is not changed.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "latbench:", err)
	os.Exit(2)
}

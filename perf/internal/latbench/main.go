// Command latbench measures erdmakit's RDMA write latency (bw lat's
// ping-pong) side by side with perftest's ib_write_lat on the same device,
// in the same run: for each size, reps rounds of both tools (alternating
// which goes first), each with the same number of round trips, both in
// loopback (server and client on the device). It prints every run, the
// median latency of each tool, and the per-round ratios ours/ib_write_lat
// of the median one-way latency (lower is better for us: <= 1.00 is the
// goal), with their median and quartiles, and writes them as JSON to -out.
//
// In the lab's two-VM pair (-shell2: ERDMAKIT_LAB_ROLE a or b) it runs the
// same rounds across the two VMs instead: a serves (our bw server, and one
// ib_write_lat server per run), b runs both clients against a. With one
// vCPU per VM this compares the data paths; in loopback both ends of each
// tool share the one vCPU, and how each waits for its turn decides.
//
// `make bench-lat` (part of `make bench`) runs both in the lab:
//
//	go build -o bin/latbench ./perf/internal/latbench
//	go run ./internal/lab/cmd/labrun -shell "$PWD/bin/latbench -reps 6"
//	go run ./internal/lab/cmd/labrun -shell2 "$PWD/bin/latbench -reps 4 -iters 300"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/benchstat"
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
	Rounds []float64        `json:"round_ratios"`
	Paired benchstat.Spread `json:"paired_ratio"`
}

type report struct {
	Mode   string       `json:"mode"` // "loopback" or "two VMs"
	Device string       `json:"device"`
	Iters  int          `json:"iters"`
	Reps   int          `json:"reps"`
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
	)
	flag.Parse()
	perf.RaiseMaxProcs() // as the erdmakit CLI does
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sizes, err := benchstat.IntList(*sizesArg)
	if err != nil {
		fatal(fmt.Errorf("-sizes: %w", err))
	}
	host, _ := os.Hostname()
	rep := report{Mode: "loopback", Device: *device, Iters: *iters, Reps: *reps, Host: host}
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
		if err := serve(ctx, t, sizes, *reps); err != nil {
			fatal(err)
		}
		return
	case "b":
		if *peer == "" {
			fatal(fmt.Errorf("role b needs -peer"))
		}
		t.peer, rep.Mode = *peer, "two VMs"
	}
	fmt.Printf("latbench: %s, %d round trips per run, %d rounds per size, %s\n", *device, *iters, *reps, rep.Mode)
	run := 0 // perftest runs so far: the two VMs number their ports alike
	for _, size := range sizes {
		sr := sizeResult{Size: size}
		for r := 0; r < *reps; r++ {
			med := map[string]float64{}
			for k := range 2 {
				var s sample
				if (r+k)%2 == 0 {
					s = t.ours(ctx, size)
				} else {
					s = t.perftest(ctx, size, perftest.DefaultPort+run)
					run++
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
		sr.Paired = benchstat.Quartiles(sr.Rounds)
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
		fmt.Printf("| %d | %.2f | %.2f | %.3f | %s |\n", s.Size, s.OursUS, s.TheirsUS, s.Ratio, benchstat.Format(s.Paired, len(s.Rounds)))
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

// tools runs each tool once, in loopback or (peer set) against the peer.
type tools struct {
	link   perf.Link
	binary string
	device string
	gid    int
	iters  int
	peer   string
}

func (t tools) ours(ctx context.Context, size int) sample {
	s := sample{Tool: "erdmakit"}
	// No warm-up: ib_write_lat has none (it drops its two largest samples).
	cfg := perf.LatencyConfig{Iterations: t.iters, Warmup: -1}
	var (
		results []perf.LatencyResult
		errs    []error
	)
	if t.peer == "" {
		results, errs = perf.LatencyLoopback(ctx, []perf.Link{t.link}, cfg, []int{size})
	} else {
		addr := net.JoinHostPort(t.peer, strconv.Itoa(perf.DefaultPort))
		for try := 0; try < 60; try++ { // the peer's server may still be starting
			results, errs = perf.RunLatencyClients(ctx, []perf.Link{t.link}, addr, "", cfg, []int{size})
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

// serve is role a: our bw server for every ping-pong of b, and one
// ib_write_lat server per run, in b's order, until b made all of its runs.
func serve(ctx context.Context, t tools, sizes []int, reps int) error {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(perf.DefaultPort))
	if err != nil {
		return err
	}
	want := len(sizes) * reps
	done := make(chan struct{}, want)
	srv := &perf.Server{Links: []perf.Link{t.link}, OnTest: func(st perf.ServerTest) {
		if st.Err != nil {
			fmt.Println("latbench: serving erdmakit:", st.Err)
		}
		done <- struct{}{}
	}}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	run := 0
	for _, size := range sizes {
		for range reps {
			runs := perftest.ServeWriteLat(ctx, perftest.Options{Binary: t.binary, Devices: []string{t.device}, Size: size,
				Iterations: t.iters, GIDIndex: t.gid, Port: perftest.DefaultPort + run, Timeout: 10 * time.Minute})
			if runs[0].Error != "" {
				fmt.Println("latbench: serving ib_write_lat:", runs[0].Error)
			}
			run++
		}
	}
	for range want {
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			fmt.Println("latbench: the client's last erdmakit runs never came")
		}
	}
	stop()
	return <-served
}

func medianOf(ss []sample, tool string) float64 {
	var v []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" {
			v = append(v, s.MedianUS)
		}
	}
	return benchstat.Quantile(v, 0.5)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "latbench:", err)
	os.Exit(2)
}

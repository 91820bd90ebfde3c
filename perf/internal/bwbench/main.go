// Command bwbench measures erdmakit's RDMA write loop side by side with
// perftest's ib_write_bw on the same device, in the same run: for each size,
// reps rounds alternating ours and perftest's, with the same message size,
// QPs, TX depth and duration, both in loopback (server and client on the
// device). It prints every run, the medians and the ratios ours/perftest of
// Gbit/s and Mpps, and writes them as JSON to -out.
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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// sample is one run of one tool.
type sample struct {
	Tool string  `json:"tool"` // "erdmakit" or "ib_write_bw"
	Rep  int     `json:"rep"`
	Gbps float64 `json:"gbps"`
	Mpps float64 `json:"mpps"`
	Err  string  `json:"error,omitempty"`
}

// sizeResult is one size's runs, medians and ratios.
type sizeResult struct {
	Size         int      `json:"size"`
	Samples      []sample `json:"samples"`
	OursGbps     float64  `json:"ours_gbps"`
	PerftestGbps float64  `json:"perftest_gbps"`
	OursMpps     float64  `json:"ours_mpps"`
	PerftestMpps float64  `json:"perftest_mpps"`
	RatioGbps    float64  `json:"ratio_gbps"` // ours / perftest (medians)
	RatioMpps    float64  `json:"ratio_mpps"`
}

type report struct {
	Device   string       `json:"device"`
	QPs      int          `json:"qps"`
	Duration string       `json:"duration"`
	TxDepth  int          `json:"tx_depth"`
	Reps     int          `json:"reps"`
	Sizes    []sizeResult `json:"sizes"`
	Host     string       `json:"host"`
}

func main() {
	var (
		device   = flag.String("device", envOr("ERDMAKIT_LAB_DEVICE", "rxe0"), "RDMA device")
		gid      = flag.Int("gid-index", envInt("ERDMAKIT_LAB_GID_INDEX", -1), "GID index for both tools (-1: ours picks, perftest gets the same)")
		qps      = flag.Int("qps", 1, "queue pairs")
		duration = flag.Duration("duration", 3*time.Second, "measured time per run (whole seconds, perftest -D)")
		reps     = flag.Int("reps", 3, "rounds per size (each: ours, then perftest, alternating who goes first)")
		sizesArg = flag.String("sizes", "65536,4096", "message sizes")
		out      = flag.String("out", filepath.Join(envOr("ERDMAKIT_LAB_OUT", os.TempDir()), "bwbench.json"), "JSON report")
		binary   = flag.String("perftest", "ib_write_bw", "ib_write_bw program")
		postList = flag.Int("post-list", 0, "erdmakit's post list (0: auto)")
		cqMod    = flag.Int("cq-mod", 0, "CQ moderation for both (0: perftest's default)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var sizes []int
	for _, s := range strings.Split(*sizesArg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatal(fmt.Errorf("size %q", s))
		}
		sizes = append(sizes, n)
	}
	host, _ := os.Hostname()
	rep := report{Device: *device, QPs: *qps, Duration: duration.String(), TxDepth: perf.DefaultTxDepth, Reps: *reps, Host: host}
	link, err := perf.OpenVerbsLink(*device, perf.VerbsOptions{GIDIndex: *gid})
	if err != nil {
		fatal(err)
	}
	defer link.Close()
	gidIndex := *gid
	if gidIndex < 0 {
		gidIndex = 1 // rxe's first IPv4 RoCE v2 entry in the lab; pass -gid-index elsewhere
	}
	fmt.Printf("bwbench: %s, %d QP(s), %s per run, tx depth %d, %d rounds per size\n", *device, *qps, *duration, perf.DefaultTxDepth, *reps)
	for _, size := range sizes {
		sr := sizeResult{Size: size}
		for r := 0; r < *reps; r++ {
			tools := []string{"erdmakit", "ib_write_bw"}
			if r%2 == 1 {
				tools[0], tools[1] = tools[1], tools[0]
			}
			for _, tool := range tools {
				var s sample
				if tool == "erdmakit" {
					s = runOurs(ctx, link, size, *qps, *duration, *postList, *cqMod)
				} else {
					s = runPerftest(ctx, *binary, *device, gidIndex, size, *qps, *duration, *cqMod)
				}
				s.Rep = r + 1
				fmt.Printf("  size %7d  round %d  %-11s  %8.4f Gbit/s  %8.5f Mpps  %s\n", size, s.Rep, s.Tool, s.Gbps, s.Mpps, s.Err)
				sr.Samples = append(sr.Samples, s)
			}
		}
		sr.OursGbps, sr.OursMpps = medians(sr.Samples, "erdmakit")
		sr.PerftestGbps, sr.PerftestMpps = medians(sr.Samples, "ib_write_bw")
		if sr.PerftestGbps > 0 {
			sr.RatioGbps = sr.OursGbps / sr.PerftestGbps
		}
		if sr.PerftestMpps > 0 {
			sr.RatioMpps = sr.OursMpps / sr.PerftestMpps
		}
		rep.Sizes = append(rep.Sizes, sr)
	}
	fmt.Println()
	fmt.Println("| size | erdmakit Gbit/s | ib_write_bw Gbit/s | ratio | erdmakit Mpps | ib_write_bw Mpps | ratio |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range rep.Sizes {
		fmt.Printf("| %d | %.4f | %.4f | %.3f | %.5f | %.5f | %.3f |\n", s.Size, s.OursGbps, s.PerftestGbps, s.RatioGbps, s.OursMpps, s.PerftestMpps, s.RatioMpps)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bwbench:", err)
	} else {
		fmt.Println("bwbench: wrote", *out)
	}
	for _, s := range rep.Sizes {
		if s.RatioGbps == 0 {
			os.Exit(1) // a tool produced no figure
		}
	}
}

func runOurs(ctx context.Context, link perf.Link, size, qps int, d time.Duration, postList, cqMod int) sample {
	s := sample{Tool: "erdmakit"}
	cfg := perf.Config{Size: size, QPs: qps, Duration: d, Warmup: 2 * time.Second, Cooldown: 2 * time.Second,
		PostList: postList, CQMod: cqMod}
	results, errs := perf.Loopback(ctx, []perf.Link{link}, cfg, nil)
	if len(errs) > 0 || len(results) != 1 {
		s.Err = fmt.Sprint(errs)
		return s
	}
	s.Gbps, s.Mpps = results[0].AvgGbps, results[0].Mpps
	return s
}

func runPerftest(ctx context.Context, bin, dev string, gid, size, qps int, d time.Duration, cqMod int) sample {
	s := sample{Tool: "ib_write_bw"}
	var extra []string
	if cqMod > 0 {
		extra = []string{"-Q", strconv.Itoa(cqMod)}
	}
	runs := perftest.RunWriteBW(ctx, perftest.Options{Binary: bin, Devices: []string{dev}, QPs: qps, Size: size,
		Duration: d, GIDIndex: gid, Port: perftest.DefaultPort, Timeout: d + 90*time.Second, Extra: extra})
	r := runs[0]
	if r.Error != "" || r.Client == nil || len(r.Client.Results) == 0 {
		s.Err = r.Error
		return s
	}
	x := r.Client.Results[len(r.Client.Results)-1]
	s.Gbps, s.Mpps = x.BWAvgGbps, x.MsgRateMpps
	return s
}

func medians(ss []sample, tool string) (gbps, mpps float64) {
	var g, m []float64
	for _, s := range ss {
		if s.Tool == tool && s.Err == "" {
			g, m = append(g, s.Gbps), append(m, s.Mpps)
		}
	}
	return median(g), median(m)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
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
	fmt.Fprintln(os.Stderr, "bwbench:", err)
	os.Exit(2)
}

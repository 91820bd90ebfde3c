// Command logbench measures how fast ncclog.Analyze (a parallel scan:
// one worker per CPU) analyses an NCCL_DEBUG=INFO log, against `grep -c
// NET/IB` (what operators run today), `wc -l` (reading the file and finding
// line ends) and AnalyzeLog on one CPU, on the same file in the same run,
// optionally also the CLI as a whole process (-cli bin/erdmakit: its peak
// memory is printed too).
//
// The log is built by repeating the sample logs (nccl/ncclog/testdata: B*, C*,
// erdma-*) into a temporary file of -size bytes (default 1 GiB; the
// environment variable ERDMAKIT_LOGBENCH_SIZE, e.g. "64M", overrides the
// default for quick runs); -layout mpirun tags every line as mpirun
// --tag-output does. One untimed pass puts the file in the page cache; then
// every tool runs once per round, the order rotating, for -runs rounds. It
// prints each tool's best run and CPU seconds per GiB (best and median of the
// rounds) and, per peer, AnalyzeLog's throughput over the
// peer's in each round with the median and quartiles of those ratios, and
// with -cli the same for the CLI's whole process (start-up and JSON output
// included), which is what docs/parse.md's goal is judged on; the load
// average before and after goes with the figures.
//
//	go run ./nccl/internal/logbench              # 1 GiB
//	go run ./nccl/internal/logbench -size 64M -runs 5 -cli bin/erdmakit
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "logbench:", err)
		os.Exit(1)
	}
}

// Result is one tool's best run.
type Result struct {
	Tool    string  `json:"tool"`
	Seconds float64 `json:"seconds"`  // wall clock
	MBps    float64 `json:"mb_per_s"` // 10^6 bytes per wall-clock second
	// CPUSeconds is user+system CPU time of the best run by CPU (the child
	// process's rusage, or this process's for AnalyzeLog); on a loaded
	// machine it is steadier than the wall clock.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUMBps    float64 `json:"mb_per_cpu_s"`
	// CPUPerGiB is CPUSeconds per GiB of the log; MedianCPUPerGiB the
	// median over the rounds (the figure docs/parse.md quotes).
	CPUPerGiB       float64 `json:"cpu_s_per_gib"`
	MedianCPUPerGiB float64 `json:"median_cpu_s_per_gib"`
	// MaxRSSKiB is the peak resident memory of a tool run as a process
	// (0 for AnalyzeLog in this process).
	MaxRSSKiB int64  `json:"max_rss_kib,omitempty"`
	Output    string `json:"output"` // what the tool found (a count, a digest)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("logbench", flag.ContinueOnError)
	def := "1G"
	if v := os.Getenv("ERDMAKIT_LOGBENCH_SIZE"); v != "" {
		def = v
	}
	sizeFlag := fs.String("size", def, "size of the generated log (bytes, or with K/M/G suffix)")
	samples := fs.String("samples", "", "directory of sample logs (default: nccl/ncclog/testdata next to this program's module root)")
	runs := fs.Int("runs", 3, "timed runs per tool")
	keep := fs.String("file", "", "write the log here and keep it (default: a temporary file, removed at the end)")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the AnalyzeLog runs to this file")
	cli := fs.String("cli", "", "also time this erdmakit binary's `parse nccl-log FILE --json` (whole process, peak memory)")
	layout := fs.String("layout", "samples", "how the log is built: samples (the sample logs repeated) or mpirun (each line tagged [1,rank]<stdout>: as mpirun --tag-output does)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	size, err := units.Parse(*sizeFlag, math.MaxInt64)
	if err != nil {
		return err
	}
	if *runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	dir := *samples
	if dir == "" {
		if dir, err = findSamples(); err != nil {
			return err
		}
	}
	path := *keep
	if path == "" {
		tmp, err := os.MkdirTemp("", "logbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "nccl.log")
	}
	if *layout != "samples" && *layout != "mpirun" {
		return fmt.Errorf("-layout %q: want samples or mpirun", *layout)
	}
	written, err := buildLog(dir, path, size, *layout == "mpirun")
	if err != nil {
		return err
	}

	tools := []tool{
		{name: "wc -l", fn: func() (string, float64, int64, error) { return command(ctx, "wc", "-l", path) }},
		{name: "grep -c NET/IB", fn: func() (string, float64, int64, error) { return command(ctx, "grep", "-c", "NET/IB", path) }},
		{name: "erdmakit AnalyzeLog", fn: func() (string, float64, int64, error) { return analyze(path, 0) }},
		{name: "AnalyzeLog, 1 CPU", fn: func() (string, float64, int64, error) { return analyze(path, 1) }},
	}
	if *cli != "" {
		tools = append(tools, tool{name: "erdmakit parse nccl-log --json", fn: func() (string, float64, int64, error) {
			out, cpu, rss, err := command(ctx, *cli, "parse", "nccl-log", path, "--json")
			return fmt.Sprintf("%d bytes of JSON", len(out)), cpu, rss, err
		}})
	}
	loadBefore := loadAvg()
	if _, _, _, err := tools[0].fn(); err != nil { // warm the page cache
		return err
	}
	if *cpuprofile != "" {
		pf, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	best := make([]Result, len(tools))
	// Paired ratios: every tool runs once per round, the order rotating
	// from round to round, and AnalyzeLog's throughput is divided by each
	// peer's in the same round, so that a machine whose load changes
	// between rounds skews both sides of a ratio alike.
	secs := make([][]float64, len(tools))
	cpus := make([][]float64, len(tools))
	for r := 0; r < *runs; r++ {
		for k := range tools {
			i := (r + k) % len(tools)
			t := tools[i]
			start := time.Now()
			out, cpu, rss, err := t.fn()
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			sec := time.Since(start).Seconds()
			secs[i] = append(secs[i], sec)
			if cpu > 0 {
				cpus[i] = append(cpus[i], cpu)
			}
			b := &best[i]
			b.Tool, b.Output = t.name, out
			if b.Seconds == 0 || sec < b.Seconds {
				b.Seconds, b.MBps = sec, float64(written)/sec/1e6
			}
			if cpu > 0 && (b.CPUSeconds == 0 || cpu < b.CPUSeconds) {
				b.CPUSeconds, b.CPUMBps = cpu, float64(written)/cpu/1e6
			}
			b.MaxRSSKiB = max(b.MaxRSSKiB, rss)
		}
	}
	gib := float64(written) / (1 << 30)
	for i := range best {
		best[i].CPUPerGiB = best[i].CPUSeconds / gib
		if len(cpus[i]) > 0 {
			best[i].MedianCPUPerGiB = median(cpus[i]) / gib
		}
	}
	// Subjects: AnalyzeLog in this process, and the CLI as a whole
	// process (what the goal is about: start-up, reading, JSON out).
	subjects := []int{2}
	if *cli != "" {
		subjects = append(subjects, len(tools)-1)
	}
	var ratios []Ratio
	for _, s := range subjects {
		for i, t := range tools {
			if i == s || (s == 2 && i == len(tools)-1 && *cli != "") {
				continue
			}
			per := make([]float64, *runs)
			for r := range per {
				per[r] = secs[i][r] / secs[s][r] // the subject's throughput / the peer's
			}
			q1, med, q3 := quartiles(per)
			r := Ratio{Subject: tools[s].name, Peer: t.name, Q1: q1, Median: med, Q3: q3, PerRound: per}
			if len(cpus[i]) == *runs && len(cpus[s]) == *runs {
				cpu := make([]float64, *runs)
				for k := range cpu {
					cpu[k] = cpus[s][k] / cpus[i][k]
				}
				r.CPUMedian = median(cpu)
			}
			ratios = append(ratios, r)
		}
	}
	if *asJSON {
		return render.JSON(stdout, map[string]any{"bytes": written, "layout": *layout, "runs": *runs,
			"load_before": loadBefore, "load_after": loadAvg(), "results": best, "ratios": ratios})
	}
	fmt.Fprintf(stdout, "log: %d bytes (%.0f MiB), layout %s, built from %s; %d rounds, order rotating; GOMAXPROCS %d; %d CPUs\n",
		written, float64(written)/(1<<20), *layout, dir, *runs, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(stdout, "%s; load average before %s, after %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadBefore, loadAvg())
	t := render.NewTable("TOOL", "BEST S", "MB/s", "CPU-s/GiB BEST", "CPU-s/GiB MEDIAN", "MAX RSS MiB", "FOUND")
	for _, b := range best {
		rss := "-"
		if b.MaxRSSKiB > 0 {
			rss = fmt.Sprintf("%.1f", float64(b.MaxRSSKiB)/1024)
		}
		t.Add(b.Tool, fmt.Sprintf("%.3f", b.Seconds), fmt.Sprintf("%.0f", b.MBps),
			fmt.Sprintf("%.3f", b.CPUPerGiB), fmt.Sprintf("%.3f", b.MedianCPUPerGiB), rss, b.Output)
	}
	if err := t.Write(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "throughput / peer's, per round (wall clock); cpu: the subject's CPU time / the peer's, median of the rounds:")
	for _, r := range ratios {
		fmt.Fprintf(stdout, "  %-30s vs %-30s median %.2f  quartiles %.2f-%.2f  cpu %.2f  rounds %s\n", r.Subject, r.Peer, r.Median, r.Q1, r.Q3, r.CPUMedian, fmtRatios(r.PerRound))
	}
	return nil
}

type tool struct {
	name string
	fn   func() (out string, cpuSeconds float64, maxRSSKiB int64, err error)
}

// Ratio is a subject's throughput (AnalyzeLog, or the CLI's whole
// process) divided by a peer's, one per round.
type Ratio struct {
	Subject  string    `json:"subject"`
	Peer     string    `json:"peer"`
	Q1       float64   `json:"q1"`
	Median   float64   `json:"median"`
	Q3       float64   `json:"q3"`
	PerRound []float64 `json:"per_round"`
	// CPUMedian is the subject's CPU time over the peer's, the median of
	// the rounds (0 where a tool's CPU time was not read).
	CPUMedian float64 `json:"cpu_median"`
}

func fmtRatios(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// quartiles returns the first quartile, the median and the third quartile
// (medians of the halves).
func quartiles(v []float64) (q1, med, q3 float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 1 {
		return s[0], s[0], s[0]
	}
	return median(s[:n/2]), median(s), median(s[(n+1)/2:])
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// command runs a tool with LC_ALL=C (grep's fastest mode) and returns its
// output, the CPU time it used and its peak resident memory. Its output goes
// to a pipe, never /dev/null (GNU grep stops at the first match when it
// writes to /dev/null).
func command(ctx context.Context, name string, args ...string) (string, float64, int64, error) {
	cmd := execx.Command(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() <= 2 && len(out) > 0 {
		err = nil // grep without a match (1); erdmakit's warn and fail verdicts (1, 2)
	}
	cpu, rss := 0.0, int64(0)
	if ps := cmd.ProcessState; ps != nil {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	return strings.TrimSpace(string(out)), cpu, rss, err
}

// analyze runs ncclog.Analyze in this process, on procs CPUs (0: all).
func analyze(path string, procs int) (string, float64, int64, error) {
	if procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	}
	before := cpuTime()
	f, err := os.Open(path)
	if err != nil {
		return "", 0, 0, err
	}
	defer f.Close()
	s, err := ncclog.Analyze(context.Background(), f)
	if err != nil {
		return "", 0, 0, err
	}
	return fmt.Sprintf("%d NCCL lines, NET/IB channels %d, network %s", s.NCCLLines, s.Channels["NET/IB"], s.Network),
		cpuTime() - before, 0, nil
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes, as
// uptime prints it ("" where /proc/loadavg cannot be read).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is this process's user+system CPU time in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// buildLog writes the samples, repeated, to path until it holds size bytes.
// With tag, each line carries an mpirun --tag-output prefix, the rank
// changing from line to line.
func buildLog(dir, path string, size int64, tag bool) (int64, error) {
	var one []byte
	for _, pat := range []string{"B*.txt", "C*.txt", "erdma*.txt"} {
		files, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return 0, err
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				return 0, err
			}
			one = append(one, b...)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				one = append(one, '\n')
			}
		}
	}
	if len(one) == 0 {
		return 0, fmt.Errorf("no sample logs (B*, C*, erdma*) in %s", dir)
	}
	if tag {
		var b bytes.Buffer
		for i, line := range bytes.SplitAfter(one, []byte("\n")) {
			if len(line) > 0 {
				fmt.Fprintf(&b, "[1,%d]<stdout>:", i%64)
				b.Write(line)
			}
		}
		one = b.Bytes()
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for n < size {
		k, err := w.Write(one)
		n += int64(k)
		if err != nil {
			f.Close()
			return n, err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return n, err
	}
	return n, f.Close()
}

// findSamples looks for nccl/ncclog/testdata above the working directory.
func findSamples() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		for _, rel := range []string{"nccl/ncclog/testdata", "testdata", "../../ncclog/testdata"} {
			p := filepath.Join(d, rel)
			if m, _ := filepath.Glob(filepath.Join(p, "C*.txt")); len(m) > 0 {
				return p, nil
			}
		}
		if d == filepath.Dir(d) {
			return "", errors.New("nccl/ncclog/testdata not found: pass -samples")
		}
	}
}

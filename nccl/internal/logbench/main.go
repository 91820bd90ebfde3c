// Command logbench measures how fast nccl.AnalyzeLog streams an
// NCCL_DEBUG=INFO log, against `grep -c NET/IB` (what operators run today)
// and `wc -l` (the limit: reading the file and finding line ends) on the
// same file in the same run, and prints the ratios.
//
// The log is built by repeating the sample logs (nccl/testdata: B*, C*,
// erdma-*) into a temporary file of -size bytes (default 1 GiB; the
// environment variable ERDMAKIT_LOGBENCH_SIZE, e.g. "64M", overrides the
// default for quick runs). Each tool runs -runs times, interleaved, after one
// untimed pass that puts the file in the page cache; the best run counts.
//
//	go run ./nccl/internal/logbench              # 1 GiB
//	go run ./nccl/internal/logbench -size 64M -runs 5
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nccl"
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
	Output     string  `json:"output"` // what the tool found (a count, a digest)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("logbench", flag.ContinueOnError)
	def := "1G"
	if v := os.Getenv("ERDMAKIT_LOGBENCH_SIZE"); v != "" {
		def = v
	}
	sizeFlag := fs.String("size", def, "size of the generated log (bytes, or with K/M/G suffix)")
	samples := fs.String("samples", "", "directory of sample logs (default: nccl/testdata next to this program's module root)")
	runs := fs.Int("runs", 3, "timed runs per tool")
	keep := fs.String("file", "", "write the log here and keep it (default: a temporary file, removed at the end)")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the AnalyzeLog runs to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	size, err := parseSize(*sizeFlag)
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
	written, err := buildLog(dir, path, size)
	if err != nil {
		return err
	}

	tools := []struct {
		name string
		fn   func() (string, float64, error) // output, CPU seconds
	}{
		{"wc -l", func() (string, float64, error) { return command(ctx, "wc", "-l", path) }},
		{"grep -c NET/IB", func() (string, float64, error) { return command(ctx, "grep", "-c", "NET/IB", path) }},
		{"erdmakit AnalyzeLog", func() (string, float64, error) { return analyze(path) }},
	}
	if _, _, err := tools[0].fn(); err != nil { // warm the page cache
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
	// Paired ratios: AnalyzeLog against grep and wc in the same round, so
	// that a machine whose load changes between rounds skews both alike.
	var vsGrep, vsWC []float64
	for r := 0; r < *runs; r++ {
		var secs [3]float64
		for i, t := range tools {
			start := time.Now()
			out, cpu, err := t.fn()
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			sec := time.Since(start).Seconds()
			secs[i] = sec
			b := &best[i]
			b.Tool, b.Output = t.name, out
			if b.Seconds == 0 || sec < b.Seconds {
				b.Seconds, b.MBps = sec, float64(written)/sec/1e6
			}
			if cpu > 0 && (b.CPUSeconds == 0 || cpu < b.CPUSeconds) {
				b.CPUSeconds, b.CPUMBps = cpu, float64(written)/cpu/1e6
			}
		}
		vsGrep = append(vsGrep, secs[1]/secs[2])
		vsWC = append(vsWC, secs[0]/secs[2])
	}
	medGrep, medWC := median(vsGrep), median(vsWC)
	if *asJSON {
		return render.JSON(stdout, map[string]any{"bytes": written, "runs": *runs, "results": best,
			"ratio_vs_grep": best[2].MBps / best[1].MBps, "ratio_vs_wc": best[2].MBps / best[0].MBps,
			"paired_ratio_vs_grep_median": medGrep, "paired_ratio_vs_wc_median": medWC,
			"cpu_ratio_vs_grep": best[2].CPUMBps / best[1].CPUMBps, "cpu_ratio_vs_wc": best[2].CPUMBps / best[0].CPUMBps})
	}
	fmt.Fprintf(stdout, "log: %d bytes (%.0f MiB) built from %s, best of %d runs\n", written, float64(written)/(1<<20), dir, *runs)
	t := render.NewTable("TOOL", "SECONDS", "MB/s", "CPU SECONDS", "MB/CPU-s", "FOUND")
	for _, b := range best {
		t.Add(b.Tool, fmt.Sprintf("%.3f", b.Seconds), fmt.Sprintf("%.0f", b.MBps),
			fmt.Sprintf("%.3f", b.CPUSeconds), fmt.Sprintf("%.0f", b.CPUMBps), b.Output)
	}
	if err := t.Write(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "best runs:         AnalyzeLog / grep -c NET/IB = %.2f; AnalyzeLog / wc -l = %.2f\n",
		best[2].MBps/best[1].MBps, best[2].MBps/best[0].MBps)
	fmt.Fprintf(stdout, "per round, median: AnalyzeLog / grep -c NET/IB = %.2f; AnalyzeLog / wc -l = %.2f\n", medGrep, medWC)
	fmt.Fprintf(stdout, "CPU time, best:    AnalyzeLog / grep -c NET/IB = %.2f; AnalyzeLog / wc -l = %.2f\n",
		best[2].CPUMBps/best[1].CPUMBps, best[2].CPUMBps/best[0].CPUMBps)
	return nil
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
// output and the CPU time it used.
func command(ctx context.Context, name string, args ...string) (string, float64, error) {
	cmd := execx.Command(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && name == "grep" && exit.ExitCode() == 1 {
		err = nil // no match
	}
	cpu := 0.0
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	return strings.TrimSpace(string(out)), cpu, err
}

func analyze(path string) (string, float64, error) {
	before := cpuTime()
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	s, err := nccl.AnalyzeLog(f)
	if err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("%d NCCL lines, NET/IB channels %d, network %s", s.NCCLLines, s.Channels["NET/IB"], s.Network),
		cpuTime() - before, nil
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
func buildLog(dir, path string, size int64) (int64, error) {
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

// findSamples looks for nccl/testdata above the working directory.
func findSamples() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		for _, rel := range []string{"nccl/testdata", "testdata", "../../testdata"} {
			p := filepath.Join(d, rel)
			if m, _ := filepath.Glob(filepath.Join(p, "C*.txt")); len(m) > 0 {
				return p, nil
			}
		}
		if d == filepath.Dir(d) {
			return "", errors.New("nccl/testdata not found: pass -samples")
		}
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q: want bytes or a number with K, M or G", s)
	}
	return n * mult, nil
}

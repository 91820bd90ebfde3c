// Command labrun runs erdmakit's lab tests in the RDMA lab (Soft-RoCE under
// qemu; see package internal/lab), or a command in the lab's VMs.
//
//	go run ./internal/lab/cmd/labrun                      # every lab test
//	go run ./internal/lab/cmd/labrun -pkg ./ibverbs -run TestLabQP
//	go run ./internal/lab/cmd/labrun -shell 'ibv_devinfo -v'
//	go run ./internal/lab/cmd/labrun -shell2 'ip -4 addr show eth0'
//
// Exit status: 0 all passed (or, outside CI, the lab cannot start here), 1 a
// test failed, 2 the lab could not build or boot (under CI also when it is
// unavailable), or the -shell command's status.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/lab"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("labrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pkgs multiFlag
	fs.Var(&pkgs, "pkg", "package dir with lab tests (repeatable; default: every package with lab tests)")
	runPat := fs.String("run", "", "test pattern (-test.run); default ^TestLab (one VM) and ^TestLab2Host (two VMs)")
	bench := fs.String("bench", "", "also run benchmarks matching this pattern (-test.bench) in the one-VM run")
	timeout := fs.Duration("timeout", 240*time.Second, "bound on each test binary (or -shell command) in the guest")
	shell := fs.String("shell", "", "run this sh command in one lab VM instead of the tests")
	shell2 := fs.String("shell2", "", "run this sh command in both VMs of the two-VM lab")
	work := fs.String("work", "", "keep binaries, scripts and logs in this dir (default: a temp dir, removed when all pass)")
	kernel := fs.String("kernel", "", "kernel version to boot (default: the installed linux-image)")
	verbose := fs.Bool("v", false, "echo the guests' consoles and print every test's output")
	jsonOut := fs.Bool("json", false, "print the summary as JSON")
	seq := fs.Bool("seq", false, "boot the two-VM pair after the one-VM run instead of alongside it")
	root := fs.String("C", ".", "module root (the checkout)")
	icount := fs.String("icount", "", `qemu's -icount for the VMs ("shift=2,sleep=on": the guest's clock counts instructions, so the host's load does not move a benchmark's figures)`)
	cpus := fs.Int("smp", 1, "vCPUs per VM (the tests are written for 1; more for experiments that pin each end to a vCPU of its own)")
	record := fs.String("record", "", "record the guest's rxe host tree into this dir or .tar.gz (replaced) instead of testing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))

	abs, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(stderr, "labrun:", err)
		return 2
	}
	o := lab.Options{
		ModuleRoot: abs, Packages: pkgs, Run: *runPat, Bench: *bench, Timeout: *timeout,
		WorkDir: *work, Kernel: *kernel, Sequential: *seq, Progress: stderr, Strict: labtest.InCI(), CI: os.Getenv("CI"), ICount: *icount, CPUs: *cpus,
	}
	if *verbose {
		o.Console = stderr
	}
	if *work == "" {
		// A temp work dir: removed after -shell/-record and after a run that
		// passed; kept (and named) when something failed.
		d, err := os.MkdirTemp("", "erdmakit-lab-")
		if err != nil {
			fmt.Fprintln(stderr, "labrun:", err)
			return 2
		}
		o.WorkDir = d
	}
	cleanup := func() {
		if *work == "" {
			os.RemoveAll(o.WorkDir)
		}
	}
	unavailable := func(err error) int {
		if errors.Is(err, lab.ErrUnavailable) && !labtest.InCI() {
			fmt.Fprintf(stderr, "labrun: SKIP: %v (outside CI this is not a failure; under CI=true it is)\n", err)
			return 0
		}
		fmt.Fprintf(stderr, "labrun: FAIL: %v\n", err)
		return 2
	}
	if *record != "" {
		dst, err := filepath.Abs(*record)
		if err == nil {
			err = lab.RecordHost(ctx, o, dst)
		}
		cleanup()
		if err != nil {
			fmt.Fprintln(stderr, "labrun: record:", err)
			return 2
		}
		fmt.Fprintln(stderr, "labrun: recorded", dst)
		return 0
	}
	if *shell != "" || *shell2 != "" {
		cmd, pair := *shell, false
		if *shell2 != "" {
			cmd, pair = *shell2, true
		}
		code, err := lab.Shell(ctx, o, cmd, pair, stdout)
		cleanup()
		if err != nil {
			if c := unavailable(err); c != 0 {
				return c
			}
		}
		return code
	}
	sum, err := lab.Run(ctx, o)
	if sum == nil {
		cleanup() // nothing ran: nothing to keep
	}
	if sum != nil {
		if *jsonOut {
			if err := json.NewEncoder(stdout).Encode(sum); err != nil {
				fmt.Fprintln(stderr, "labrun:", err)
			}
		} else {
			lab.WriteSummary(stdout, sum, o.Strict, *verbose)
		}
	}
	if err != nil {
		if sum != nil {
			fmt.Fprintf(stderr, "labrun: logs kept in %s\n", sum.WorkDir)
			for _, r := range sum.Runs {
				if r.ExitCode != -1 { // tests started: the lab broke mid-run, not "unavailable"
					fmt.Fprintf(stderr, "labrun: FAIL: %v\n", err)
					return 2
				}
			}
		}
		return unavailable(err)
	}
	if sum.Failed(o.Strict) {
		fmt.Fprintf(stderr, "labrun: FAIL (logs kept in %s)\n", sum.WorkDir)
		return 1
	}
	cleanup()
	return 0
}

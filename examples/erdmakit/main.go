// Command erdmakit proves an Alibaba Cloud GPU instance's eRDMA setup: the
// devices, GPUDirect RDMA, RDMA write bandwidth and NCCL over eRDMA.
//
// This package only wires the library packages together: one file per
// subcommand, the exit codes in exit.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/internal/safetext"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/report"
)

// globals are the flags every subcommand shares.
type globals struct {
	root    string // host root: "/" or a recorded host (directory or .tar.gz)
	json    bool
	verbose bool
	color   render.ColorMode
	stdout  io.Writer
	stderr  io.Writer
}

func newRootCmd(g *globals) *cobra.Command {
	var colorFlag string
	root := &cobra.Command{
		Use:           "erdmakit",
		Short:         "Prove an eRDMA GPU host: devices, GPUDirect RDMA, RDMA bandwidth, NCCL",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level})))
			m, err := render.ParseColorMode(colorFlag)
			if err != nil {
				return couldNotRun(fmt.Errorf("--color: %w", err))
			}
			g.color = m
			return nil
		},
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.root, "root", "/", "host root to read: / for this host, or a recorded host (directory or .tar.gz)")
	pf.BoolVar(&g.json, "json", false, "print JSON (the documented schema) instead of a table")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log what is read and run to stderr")
	pf.StringVar(&colorFlag, "color", string(render.ColorAuto), "colour tables: auto (terminals only; off under mpirun/srun ranks, NO_COLOR, TERM=dumb), always, never")
	completeValues(root, "color", string(render.ColorAuto), string(render.ColorAlways), string(render.ColorNever))
	for _, c := range subcommands(g) {
		root.AddCommand(c)
	}
	strictCommands(root)
	return root
}

func main() {
	perf.RaiseMaxProcs() // the bw write loops on one-CPU hosts (see its doc)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// colorOn reports whether tables written to w are coloured (--color).
func (g *globals) colorOn(w io.Writer) bool {
	if g.color == "" {
		return render.ColorWanted(w)
	}
	return g.color.Wanted(w)
}

// tableOptions are the text tables' options on stdout: colour as --color
// and the terminal decide.
func (g *globals) tableOptions() report.TableOptions {
	return report.TableOptions{Color: g.colorOn(g.stdout)}
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	// Text from outside (server messages, peers' host names, file names in
	// a recorded host) must not drive the terminal or forge our lines.
	stdout, stderr = safetext.NewWriter(stdout), safetext.NewWriter(stderr)
	ctx, stop := interruptible(stderr, os.Exit)
	defer stop()
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if ctx.Err() != nil && !runsUntilInterrupted(cmd) {
		// The one rule for "interrupted" (docs: README, Exit codes): a
		// check cut short by SIGINT/SIGTERM did not complete, whatever it
		// had found so far: exit 3, and say so.
		if err != nil && !errors.Is(err, context.Canceled) {
			var ex *exitError
			if !errors.As(err, &ex) || ex.err != nil {
				fmt.Fprintln(stderr, "erdmakit:", err)
			}
		}
		fmt.Fprintln(stderr, "erdmakit: interrupted: the check did not complete (exit 3); what was printed is partial")
		return ExitUnknown
	}
	if err == nil {
		return ExitOK
	}
	var ex *exitError
	if errors.As(err, &ex) {
		if ex.err != nil {
			fmt.Fprintln(stderr, "erdmakit:", ex.err)
		}
		return ex.code
	}
	fmt.Fprintln(stderr, "erdmakit:", err)
	return ExitUnknown
}

// interruptible is the CLI's context: the first SIGINT or SIGTERM cancels
// it (the command winds down, ends its children and exits 3); a second one
// exits at once with exit(3), whatever the command is blocked in (a write
// to a pipe nobody reads, a child that ignores SIGTERM). stop releases the
// signals.
func interruptible(stderr io.Writer, exit func(int)) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "erdmakit: %v again: exiting at once (exit 3); children and temporary files may be left\n", s)
			exit(ExitUnknown)
		case <-done:
		}
	}()
	return ctx, sync.OnceFunc(func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	})
}

package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// ErrCancelled is wrapped by Run's error when the context ended the run.
var ErrCancelled = errors.New("nccl-tests run cancelled")

// RunOptions are the runner's knobs; the zero value runs quietly.
type RunOptions struct {
	// Log, when set, receives the launcher's raw output (stdout and
	// stderr, in the order written) as it arrives.
	Log io.Writer
	// OnLine, when set, is called with every output line as it arrives.
	OnLine func(line string)
	// OnRow, when set, is called with each nccl-tests result row as soon as
	// its line arrives.
	OnRow func(Row)
	// Env is added to the launcher's own environment (NAME=VALUE).
	Env []string
	// Dir is the launcher's working directory ("" for the current one).
	Dir string
	// HostOfRank names the host of a rank when the output does not
	// (Command.HostOfRank; set by Run).
	HostOfRank func(rank int) string
}

// RunResult is what one nccl-tests run produced.
type RunResult struct {
	Argv []string `json:"argv"`
	// ExitCode is the launcher's exit status; -1 when it was killed by a
	// signal or never started.
	ExitCode int           `json:"exit_code"`
	Duration time.Duration `json:"duration_ns"`
	// Cancelled is true when the context ended the run.
	Cancelled bool `json:"cancelled,omitempty"`
	// Result is the parsed nccl-tests output (nil if the parser had none).
	Result *TestResult `json:"result"`
	// Failures are the classified launcher failures, with their fixes.
	Failures []LaunchFailure `json:"launch_failures"`
	// Lines is how many output lines were read.
	Lines int64 `json:"lines"`
	// Env is what the command gave every rank with a value (-x NAME=VALUE,
	// --export), for the diagnosis; set by Run, nil from RunArgv.
	Env []Var `json:"env,omitempty"`
}

// Run builds c's argv and runs it (see RunArgv).
func Run(ctx context.Context, c Command, opts RunOptions) (*RunResult, error) {
	argv, err := c.Argv()
	if err != nil {
		return nil, err
	}
	opts.Env = append(append([]string(nil), opts.Env...), c.Environ()...)
	if opts.HostOfRank == nil {
		opts.HostOfRank = c.HostOfRank
	}
	res, err := RunArgv(ctx, argv, opts)
	if res != nil {
		res.Env = c.Vars()
	}
	return res, err
}

// RunArgv execs argv (argv[0] looked up on PATH) in its own process group
// and streams its merged output through the nccl-tests parser, the launch
// classifier and opts' callbacks. Cancelling ctx ends the whole group
// (SIGTERM, then SIGKILL after execx.Grace): no rank is left behind.
//
// A launcher that ran and failed is not an error: see ExitCode and
// Failures. The error is for a launcher that could not start (wrapping
// exec.ErrNotFound when it is not installed) and for a cancelled run
// (wrapping ErrCancelled and ctx's error); the result is returned with
// what was read in both cases.
func RunArgv(ctx context.Context, argv []string, opts RunOptions) (*RunResult, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: empty argv", ErrBadCommand)
	}
	res := &RunResult{Argv: argv, ExitCode: -1}
	cmd := execx.Command(ctx, argv[0], argv[1:]...)
	cmd.Dir = opts.Dir
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	sweepOnCancel(cmd)
	s := newStream(opts)
	cmd.Stdout = s
	cmd.Stderr = s
	slog.Debug("nccl: running", "argv", ShellJoin(argv))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	err := cmd.Wait()
	res.Duration = time.Since(start)
	s.flush()
	res.Lines = s.lines
	res.Result = s.parser.Result()
	res.Failures = s.classifier.Failures()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		res.Cancelled = true
		return res, fmt.Errorf("%w: %w", ErrCancelled, ctx.Err())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		// Wait failed for another reason than the exit status (an
		// I/O error, or output still held open by an orphan after
		// execx's WaitDelay): report it with what was read.
		return res, fmt.Errorf("running %s: %w", argv[0], err)
	}
	return res, nil
}

// maxLine bounds one output line; longer lines are cut (NCCL lines are
// short; a runaway line must not grow memory).
const maxLine = 64 * 1024

// stream splits the launcher's output into lines and feeds them on. exec
// calls Write from one goroutine at a time (Stdout == Stderr).
type stream struct {
	opts       RunOptions
	parser     *TestParser
	classifier LaunchClassifier
	buf        []byte
	lines      int64
}

func newStream(opts RunOptions) *stream {
	s := &stream{opts: opts, parser: NewTestParser()}
	s.parser.OnRow = opts.OnRow
	s.classifier.HostOfRank = opts.HostOfRank
	return s
}

func (s *stream) Write(p []byte) (int, error) {
	if s.opts.Log != nil {
		if _, err := s.opts.Log.Write(p); err != nil {
			slog.Warn("nccl: writing the raw log failed; the run goes on", "err", err)
			s.opts.Log = nil
		}
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		s.line()
		p = p[i+1:]
	}
	return n, nil
}

func (s *stream) add(b []byte) {
	room := maxLine - len(s.buf)
	if len(b) > room {
		b = b[:room]
	}
	s.buf = append(s.buf, b...)
}

func (s *stream) line() {
	b := bytes.TrimSuffix(s.buf, []byte("\r"))
	s.lines++
	s.parser.FeedBytes(b)
	// Most lines are result rows and NCCL INFO lines: make a string only
	// for the lines the classifier may want, or a callback asks for.
	if s.opts.OnLine != nil || s.classifier.wants(b) {
		line := string(b)
		s.classifier.Line(line)
		if s.opts.OnLine != nil {
			s.opts.OnLine(line)
		}
	}
	s.buf = s.buf[:0]
}

func (s *stream) flush() {
	if len(s.buf) > 0 {
		s.line()
	}
}

// sweepOnCancel makes cancelling cmd also end its descendants that left its
// process group: Open MPI starts each local rank in a process group of its
// own, so the group signal reaches them only through mpirun. If mpirun is
// killed before it has ended them, they would be orphaned; the sweep
// snapshots the process tree when the run is cancelled and signals every
// process in it too (SIGTERM, then SIGKILL after execx.Grace, checking the
// start time so that a reused pid is left alone).
func sweepOnCancel(cmd *exec.Cmd) {
	groupCancel := cmd.Cancel
	cmd.Cancel = func() error {
		tree := descendants(cmd.Process.Pid)
		err := groupCancel()
		for _, p := range tree {
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
		}
		if len(tree) > 0 {
			go func() {
				time.Sleep(execx.Grace)
				for _, p := range tree {
					if st, ok := procStart(p.pid); ok && st == p.start {
						_ = syscall.Kill(p.pid, syscall.SIGKILL)
					}
				}
			}()
		}
		return err
	}
}

type procID struct {
	pid   int
	start uint64 // field 22 of /proc/<pid>/stat, clock ticks since boot
}

// descendants lists every process below pid, from /proc.
func descendants(pid int) []procID {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procID{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, ok := procStat(p)
		if ok {
			children[ppid] = append(children[ppid], procID{pid: p, start: start})
		}
	}
	var out []procID
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 1<<16 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

func procStart(pid int) (uint64, bool) {
	_, start, ok := procStat(pid)
	return start, ok
}

// procStat reads the parent pid and start time from /proc/<pid>/stat.
func procStat(pid int) (ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return ppid, start, true
}

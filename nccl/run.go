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
	return RunArgv(ctx, argv, opts)
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
	line := string(b)
	s.parser.Feed(line)
	s.classifier.Line(line)
	if s.opts.OnLine != nil {
		s.opts.OnLine(line)
	}
	s.buf = s.buf[:0]
}

func (s *stream) flush() {
	if len(s.buf) > 0 {
		s.line()
	}
}

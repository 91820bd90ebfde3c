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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// ErrCancelled is wrapped by Run's error when the context ended the run.
var ErrCancelled = errors.New("nccl-tests run cancelled")

// RunOptions are the runner's knobs; the zero value runs quietly.
type RunOptions struct {
	// Log, when set, receives the launcher's output (stdout and stderr)
	// line by line as lines complete: each rank's lines whole, without
	// mpirun's --tag-output tags (what `erdmakit parse` reads).
	Log io.Writer
	// OnLine, when set, is called with every output line as it arrives.
	OnLine func(line string)
	// OnRow, when set, is called with each nccl-tests result row as soon as
	// its line arrives.
	OnRow func(Row)
	// Env is added to the launcher's own environment (NAME=VALUE).
	Env []string
	// Environ, when not nil, is the launcher's own environment instead of
	// this process's (os.Environ()): a launcher started from a rank of
	// another job is given one without that job's per-rank variables.
	Environ []string
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
	// Warnings are NCCL variables the launcher's caller set to another
	// value than Env's (Command.EnvConflicts): the ranks got Env's.
	Warnings []string `json:"warnings,omitempty"`
	// GraphOrder is Command.GraphOrder: the net dev order of the graph
	// file the run passed ("" when none).
	GraphOrder string `json:"graph_order,omitempty"`
}

// Run builds c's argv and runs it (see RunArgv).
func Run(ctx context.Context, c Command, opts RunOptions) (*RunResult, error) {
	argv, err := c.Argv()
	if err != nil {
		return nil, err
	}
	opts.Env = append(append([]string(nil), opts.Env...), c.Environ()...)
	if c.Launcher == LauncherMPIRun || c.Launcher == "" {
		opts.Env = append(opts.Env, mpirunQuickKill()...)
	}
	if opts.HostOfRank == nil {
		opts.HostOfRank = c.HostOfRank
	}
	res, err := RunArgv(ctx, argv, opts)
	if res != nil {
		res.Env = c.Vars()
		environ := opts.Environ
		if environ == nil {
			environ = os.Environ()
		}
		res.Warnings = c.EnvConflicts(environ)
		res.GraphOrder = c.GraphOrder
	}
	return res, err
}

// mpirunSigkillTimeout is Open MPI's pause between the SIGTERM and the
// SIGKILL it sends the ranks when a job ends early (odls_base_sigkill_timeout,
// default 1 s): with it mpirun took 1-2 s to exit after a Ctrl-C, and the
// README promises one. The ranks of a benchmark have nothing to save.
const mpirunSigkillTimeout = "OMPI_MCA_odls_base_sigkill_timeout"

// mpirunQuickKill is the environment that makes mpirun end its ranks at
// once when cancelled, unless the user set the parameter.
func mpirunQuickKill() []string {
	if _, set := os.LookupEnv(mpirunSigkillTimeout); set {
		return nil
	}
	return []string{mpirunSigkillTimeout + "=0"}
}

// RunArgv execs argv (argv[0] looked up on PATH) in its own process group
// and streams its output (stdout and stderr, each by lines; ranks' lines
// rejoined, see TagOutput) through the nccl-tests parser, the launch
// classifier and opts' callbacks. Cancelling ctx ends the whole group
// (SIGTERM, then SIGKILL 3 s later): no rank is left behind.
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
	if len(opts.Env) > 0 || opts.Environ != nil {
		base := opts.Environ
		if base == nil {
			base = os.Environ()
		}
		cmd.Env = append(slices.Clip(base), opts.Env...)
	}
	waitSwept := sweepOnCancel(cmd)
	s := newStream(opts)
	cmd.Stdout = s.out
	cmd.Stderr = s.err
	slog.Debug("nccl: running", "argv", ShellJoin(argv))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	err := cmd.Wait()
	waitSwept()
	res.Duration = time.Since(start)
	s.flush()
	res.Lines = s.lines
	res.Result = s.parser.Result()
	if cmd.ProcessState != nil {
		s.classifier.LauncherExit = cmd.ProcessState.ExitCode()
	}
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

// maxTagged bounds how many ranks' cut lines a pipe keeps at once.
const maxTagged = 4096

// stream turns the launcher's output into the lines the ranks wrote and
// feeds them to the parser, the classifier and opts' callbacks. stdout and
// stderr are two pipes (so that mpirun's own messages on stderr can never
// land inside a rank's line on stdout), copied by two goroutines: the
// consumers run under mu.
type stream struct {
	mu         sync.Mutex
	opts       RunOptions
	parser     *ncclog.TestParser
	classifier ncclog.LaunchClassifier
	lines      int64
	logLine    []byte
	out, err   *pipe
}

func newStream(opts RunOptions) *stream {
	s := &stream{opts: opts, parser: ncclog.NewTestParser()}
	s.parser.OnRow = opts.OnRow
	s.classifier.HostOfRank = opts.HostOfRank
	s.out, s.err = &pipe{s: s}, &pipe{s: s}
	return s
}

// Write is the stdout pipe's (tests feed a stream through it).
func (s *stream) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s *stream) flush() {
	s.out.flush()
	s.err.flush()
}

// line hands one whole line on; tag is its rank's --tag-output tag, if any.
func (s *stream) line(tag, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b = bytes.TrimSuffix(b, []byte("\r"))
	if s.opts.Log != nil {
		s.logLine = append(append(s.logLine[:0], b...), '\n')
		if _, err := s.opts.Log.Write(s.logLine); err != nil {
			slog.Warn("nccl: writing the raw log failed; the run goes on", "err", err)
			s.opts.Log = nil
		}
	}
	s.lines++
	s.parser.FeedBytes(b)
	// Most lines are result rows and NCCL INFO lines: make a string only
	// for the lines the classifier may want, or a callback asks for.
	if s.opts.OnLine != nil || s.classifier.Wants(b) {
		line := string(b)
		s.classifier.Line(line)
		if s.opts.OnLine != nil {
			s.opts.OnLine(line)
		}
	}
	if len(tag) > 0 && bytes.Contains(b, []byte("Test ")) && bytes.Contains(b, []byte(" failure ")) {
		if r, ok := tagRank(tag); ok {
			s.classifier.RankFailed(r)
		}
	}
}

// tagRank reads the rank from "[<job>,<rank>]<stdout>:".
func tagRank(tag []byte) (int, bool) {
	i := bytes.IndexByte(tag, ']')
	j := bytes.LastIndexByte(tag[:max(i, 0)], ',')
	if i < 0 || j < 0 {
		return 0, false
	}
	r, err := strconv.Atoi(string(tag[j+1 : i]))
	return r, err == nil
}

// pipe is one of the launcher's output pipes. Open MPI forwards each rank's
// output in reads of up to 4 KiB, not in lines, so a rank's line can be cut
// and another rank's output put in the middle (mpirun, fed faster than it
// forwards, does this to a result row). With --tag-output (Command.TagOutput)
// every forwarded piece starts with its rank's tag, "[1,0]<stdout>:": pipe
// removes the tags and joins each rank's pieces back into its lines.
// Untagged output (mpirun's own messages, srun) passes through by lines.
type pipe struct {
	s    *stream
	buf  []byte            // the pipe's line so far
	cut  map[string][]byte // a rank's line begun in an earlier piece, by tag
	tags []string          // cut's keys, in the order they were cut
}

func (p *pipe) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.add(b)
			break
		}
		p.add(b[:i])
		p.end()
		b = b[i+1:]
	}
	return n, nil
}

func (p *pipe) add(b []byte) {
	room := maxLine - len(p.buf)
	if len(b) > room {
		b = b[:room]
	}
	p.buf = append(p.buf, b...)
}

// end handles one pipe line: pieces of one or more ranks, each starting
// with a tag, the last one ending the line of its rank.
func (p *pipe) end() {
	line := p.buf
	p.buf = p.buf[:0]
	for {
		tag, text, rest := nextPiece(line)
		if rest == nil {
			p.finish(tag, text)
			return
		}
		p.keep(tag, text)
		line = rest
	}
}

// keep stores a piece that does not end its rank's line.
func (p *pipe) keep(tagb, text []byte) {
	if p.cut == nil {
		p.cut = map[string][]byte{}
	}
	tag := string(tagb)
	prev, ok := p.cut[tag]
	if !ok {
		if len(p.tags) >= maxTagged {
			return // a runaway number of ranks: drop the piece
		}
		p.tags = append(p.tags, tag)
	}
	room := maxLine - len(prev)
	if len(text) > room {
		text = text[:room]
	}
	p.cut[tag] = append(prev, text...)
}

// finish ends tag's line with text.
func (p *pipe) finish(tagb, text []byte) {
	prev, ok := p.cut[string(tagb)] // no allocation for the lookup
	if !ok {
		p.s.line(tagb, text)
		return
	}
	tag := string(tagb)
	delete(p.cut, tag)
	for i, t := range p.tags {
		if t == tag {
			p.tags = append(p.tags[:i], p.tags[i+1:]...)
			break
		}
	}
	room := maxLine - len(prev)
	if len(text) > room {
		text = text[:room]
	}
	p.s.line(tagb, append(prev, text...))
}

// flush ends what is left: the pipe's last line without a newline, then
// the lines ranks left cut, in the order they were cut.
func (p *pipe) flush() {
	if len(p.buf) > 0 {
		p.end()
	}
	for _, t := range p.tags {
		p.s.line([]byte(t), p.cut[t])
	}
	p.cut, p.tags = nil, nil
}

// Open MPI's --tag-output tag is "[<job>,<rank>]<stdout>:" (or <stderr>,
// <stddiag>); its end is what pieces are found by.
var tagEnds = [][]byte{[]byte("]<stdout>:"), []byte("]<stderr>:"), []byte("]<stddiag>:")}

// nextPiece splits line into the first piece's tag (empty when the line
// does not start with one) and text, and the rest from the next tag on (nil when
// the piece runs to the end of the line).
func nextPiece(line []byte) (tag, text, rest []byte) {
	start, end := findTag(line, 0)
	if start != 0 {
		if start < 0 {
			return nil, line, nil
		}
		return nil, line[:start], line[start:]
	}
	tag = line[:end]
	next, _ := findTag(line, end)
	if next < 0 {
		return tag, line[end:], nil
	}
	return tag, line[end:next], line[next:]
}

// findTag finds the first tag in line at or after from: its start and end,
// or -1.
func findTag(line []byte, from int) (start, end int) {
	for from < len(line) {
		i := bytes.Index(line[from:], []byte("]<std"))
		if i < 0 {
			return -1, -1
		}
		i += from
		for _, e := range tagEnds {
			if !bytes.HasPrefix(line[i:], e) {
				continue
			}
			if s := tagStart(line[:i]); s >= 0 {
				return s, i + len(e)
			}
		}
		from = i + 1
	}
	return -1, -1
}

// tagStart finds where "[<job>,<rank>" begins before its "]": the rank is
// digits, the job anything short without brackets or spaces.
func tagStart(b []byte) int {
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	if i == len(b) || i == 0 || b[i-1] != ',' {
		return -1
	}
	i--
	for j := i - 1; j >= 0 && i-j <= 64; j-- {
		switch b[j] {
		case '[':
			if j == i-1 {
				return -1
			}
			return j
		case ']', ' ', '\t', ',':
			return -1
		}
	}
	return -1
}

// sweepOnCancel makes cancelling cmd also end its descendants that left its
// process group: Open MPI starts each local rank in a process group of its
// own, so the group signal reaches them only through mpirun. If mpirun is
// killed before it has ended them, they would be orphaned; the sweep
// snapshots the process tree when the run is cancelled and signals every
// process in it too (SIGTERM, then SIGKILL after execx.Grace, checking the
// start time so that a reused pid is left alone). The returned wait blocks
// until the swept processes are gone (at most execx.Grace and a second), so
// that a cancelled run returns only once its ranks have ended; it returns at
// once when the run was not cancelled.
func sweepOnCancel(cmd *exec.Cmd) (wait func()) {
	groupCancel := cmd.Cancel
	done := make(chan struct{})
	var swept atomic.Bool
	cmd.Cancel = func() error {
		tree := descendants(cmd.Process.Pid)
		err := groupCancel()
		for _, p := range tree {
			signalPID(p.pid, syscall.SIGTERM)
		}
		swept.Store(true)
		go func() {
			defer close(done)
			if !waitGone(tree, execx.Grace) {
				for _, p := range tree {
					if alive(p) {
						signalPID(p.pid, syscall.SIGKILL)
					}
				}
				waitGone(tree, time.Second)
			}
		}()
		return err
	}
	// Wait returns after cmd.Cancel has run, so swept is settled then.
	return func() {
		if swept.Load() {
			<-done
		}
	}
}

// waitGone polls until no process of tree is alive or d has passed; it
// reports whether they all went.
func waitGone(tree []procID, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !slices.ContainsFunc(tree, alive) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether p still runs: the same pid and start time, and not
// a zombie (an orphan whose reaper is slow is already ended).
func alive(p procID) bool {
	state, _, start, ok := procStat(p.pid)
	return ok && start == p.start && state != "Z" && state != "X"
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
		_, ppid, start, ok := procStat(p)
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

// procStat reads the state, parent pid and start time from
// /proc/<pid>/stat.
func procStat(pid int) (state string, ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return f[0], ppid, start, true
}

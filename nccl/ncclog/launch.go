package ncclog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// FailureKind names a launcher failure; the values are stable (JSON).
type FailureKind string

const (
	// FailRunAsRoot: mpirun refused to run as root.
	FailRunAsRoot FailureKind = "run-as-root"
	// FailSlots: more ranks than the hosts offer slots.
	FailSlots FailureKind = "not-enough-slots"
	// FailDaemons: mpirun could not start its daemons (orted) on a host:
	// ssh, host keys, orted not on the remote PATH, no route back.
	FailDaemons FailureKind = "daemons-not-started"
	// FailExecutable: the nccl-tests binary could not be found or run.
	FailExecutable FailureKind = "executable-not-found"
	// FailRankExit: a rank exited with a non-zero status.
	FailRankExit FailureKind = "rank-exited"
	// FailRankSignal: a rank was killed by a signal.
	FailRankSignal FailureKind = "rank-signalled"
	// FailAllocation: Slurm could not allocate the nodes.
	FailAllocation FailureKind = "allocation-failed"
	// FailSrunMPI: srun cannot use the --mpi plugin asked for (pmix, srun's
	// default here, is missing from a stock Debian Slurm).
	FailSrunMPI FailureKind = "srun-mpi-type"
)

// LaunchFailure is one classified launcher failure, with the step that
// fixes it.
type LaunchFailure struct {
	Kind     FailureKind `json:"kind"`
	Summary  string      `json:"summary"`
	Evidence []string    `json:"evidence"`
	Fix      string      `json:"fix"`
	// Rank, Host, ExitCode and Signal describe a failed rank; Rank is -1
	// and the others zero where they do not apply or are not known.
	Rank     int    `json:"rank"`
	Host     string `json:"host,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
}

// Finding returns the failure in the doctor's shape, id "launch-<kind>".
func (f LaunchFailure) Finding() health.Finding {
	return health.Finding{
		ID:          "launch-" + string(f.Kind),
		Severity:    health.Fail,
		Summary:     f.Summary,
		Evidence:    f.Evidence,
		Remediation: f.Fix,
	}
}

// maxEvidence bounds the evidence kept per failure, so that a runaway log
// cannot grow the classifier.
const maxEvidence = 8

// LaunchClassifier recognises launcher failures in mpirun or srun output
// fed to it line by line. Its memory is bounded whatever the log size.
// The zero value is ready to use.
type LaunchClassifier struct {
	// HostOfRank, when set, names the host of a rank the log does not name
	// (Command.HostOfRank).
	HostOfRank func(rank int) string
	// LauncherExit is the launcher's exit status when known (RunArgv sets
	// it before asking Failures): mpirun exits with the status of the
	// process that failed.
	LauncherExit int

	failures  []LaunchFailure
	rankHosts map[int]string
	block     FailureKind // inside an Open MPI help block of this kind
	pending   *LaunchFailure
	// aborted is Open MPI's "Primary job terminated normally, but N
	// process(es) returned a non-zero exit code" banner: mpirun prints it
	// first and, depending on how the other ranks ended, not always the
	// block naming the rank.
	aborted string
	// failedRanks are the ranks that printed an nccl-tests failure
	// (RankFailed), at most maxEvidence of them.
	failedRanks []int
	sshLines    []string
}

// Line feeds one line of output (without its newline).
func (c *LaunchClassifier) Line(line string) {
	s := strings.TrimSpace(line)
	if len(s) > 400 {
		s = s[:400]
	}
	switch {
	case s == "":
		return
	case strings.HasPrefix(s, "#") && strings.Contains(s, "Rank") && strings.Contains(s, " on "):
		c.rankHost(s)
	case strings.Contains(s, "has detected an attempt to run as root"):
		c.add(LaunchFailure{Kind: FailRunAsRoot, Rank: -1,
			Summary:  "mpirun refused to run as root",
			Evidence: []string{s},
			Fix:      "add --allow-run-as-root to the mpirun line (erdmakit nccl run does by default), or export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"})
	case strings.HasPrefix(s, "There are not enough slots available in the system"):
		f := LaunchFailure{Kind: FailSlots, Rank: -1,
			Summary:  "not enough slots for the ranks requested",
			Evidence: []string{s},
			Fix:      "give each host its slot count in -H (host1:8,host2:8) or slots=N in the hostfile, lower -np, or add --oversubscribe"}
		if n := lastInt(s); n > 0 {
			f.Summary = fmt.Sprintf("not enough slots for the %d ranks requested", n)
		}
		c.add(f)
		c.block = FailSlots
	case strings.HasPrefix(s, "ORTE was unable to reliably start one or more daemons") ||
		strings.HasPrefix(s, "PRTE has lost communication with a remote daemon") ||
		strings.Contains(s, "daemon did not report back when launched"):
		c.daemons(s)
	case isSSHError(s):
		c.sshLines = appendBounded(c.sshLines, s)
		c.daemons(s)
	case strings.Contains(s, "was unable to launch the specified application") ||
		strings.Contains(s, "was unable to find the specified executable"):
		c.add(LaunchFailure{Kind: FailExecutable, Rank: -1,
			Summary:  "mpirun could not find or execute the nccl-tests binary",
			Evidence: []string{s},
			Fix:      "build nccl-tests (make MPI=1) at the same path on every host, or pass --binary with an absolute path that exists on all hosts"})
		c.block = FailExecutable
	case strings.HasPrefix(s, "Primary job") && strings.Contains(s, "terminated normally, but"):
		c.aborted = s
	case strings.Contains(s, "detected that one or more processes exited with non-zero status"):
		c.pending = &LaunchFailure{Kind: FailRankExit, Rank: -1, Summary: "a rank exited with a non-zero status", Evidence: []string{s}}
	case strings.Contains(s, " noticed that process rank "):
		c.signalled(s)
	case strings.HasPrefix(s, "srun: error:") || strings.HasPrefix(s, "slurmstepd"):
		c.srunError(s)
	case c.block == FailExecutable && (strings.HasPrefix(s, "Executable:") || strings.HasPrefix(s, "Node:")):
		c.evidence(FailExecutable, s)
		if v, ok := strings.CutPrefix(s, "Executable:"); ok {
			c.last(FailExecutable).Summary = "mpirun could not find or execute " + strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(s, "Node:"); ok {
			c.last(FailExecutable).Host = strings.TrimSpace(v)
		}
	case c.pending != nil && strings.HasPrefix(s, "Process name:"):
		c.pending.Evidence = appendBounded(c.pending.Evidence, s)
		c.pending.Rank = processNameRank(s)
	case c.pending != nil && strings.HasPrefix(s, "Exit code:"):
		c.pending.Evidence = appendBounded(c.pending.Evidence, s)
		c.pending.ExitCode, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(s, "Exit code:")))
		c.finishRank(*c.pending)
		c.pending = nil
	case strings.HasPrefix(s, "-----"):
		c.block = ""
	}
}

// classifierWords are substrings of every line Line acts on outside a
// help block or a pending rank report.
var classifierWords = [][]byte{
	[]byte("Rank"), []byte("mpirun"), []byte("slots"), []byte("ORTE"), []byte("PRTE"), []byte("daemon"),
	[]byte("ssh"), []byte("Host key"), []byte("Permission denied"), []byte("orted"), []byte("srun"), []byte("slurmstepd"), []byte("-----"),
	[]byte("noticed that process rank"), []byte("unable to launch"), []byte("unable to find"), []byte("non-zero status"),
	[]byte("Primary job"),
}

// Wants reports whether Line could act on b; false means Line would ignore
// it, so a caller holding bytes can skip making a string.
func (c *LaunchClassifier) Wants(b []byte) bool {
	if c.block != "" || c.pending != nil {
		return true
	}
	for _, w := range classifierWords {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

// Failures returns what was recognised so far, in order of appearance.
func (c *LaunchClassifier) Failures() []LaunchFailure {
	out := append([]LaunchFailure(nil), c.failures...)
	if c.pending != nil { // a truncated rank block: report what is known
		out = append(out, *c.pending)
	}
	rankFailed := false
	for i := range out {
		// Completed now, not when the block was read: the nccl-tests
		// header naming the rank's host may come later (stdout and stderr
		// are read apart).
		if out[i].Kind == FailRankExit || out[i].Kind == FailRankSignal {
			out[i] = c.completeRank(out[i])
			rankFailed = true
		}
		if out[i].Rank >= 0 && out[i].Host == "" {
			out[i].Host = c.hostOf(out[i].Rank)
		}
	}
	if !rankFailed && c.aborted != "" {
		out = append(out, c.abortedRank())
	}
	return out
}

// ClassifyLaunch reads a whole launcher log and returns its failures.
func ClassifyLaunch(ctx context.Context, r io.Reader) ([]LaunchFailure, error) {
	var c LaunchClassifier
	sc := bufio.NewScanner(ctxio.NewReader(ctx, r))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		c.Line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return c.Failures(), fmt.Errorf("reading launcher output: %w", err)
	}
	return c.Failures(), nil
}

func (c *LaunchClassifier) add(f LaunchFailure) {
	for i := range c.failures {
		if c.failures[i].Kind == f.Kind && f.Kind != FailRankExit && f.Kind != FailRankSignal {
			c.failures[i].Evidence = appendBounded(c.failures[i].Evidence, f.Evidence...)
			return
		}
	}
	c.failures = append(c.failures, f)
}

func (c *LaunchClassifier) last(k FailureKind) *LaunchFailure {
	for i := len(c.failures) - 1; i >= 0; i-- {
		if c.failures[i].Kind == k {
			return &c.failures[i]
		}
	}
	return &LaunchFailure{}
}

func (c *LaunchClassifier) evidence(k FailureKind, s string) {
	f := c.last(k)
	f.Evidence = appendBounded(f.Evidence, s)
}

func (c *LaunchClassifier) daemons(s string) {
	fix := "check from this host, for every host of the run: passwordless ssh (ssh HOST true must not prompt), " +
		"known host keys (ssh-keyscan HOST >> ~/.ssh/known_hosts), the same Open MPI on the remote PATH " +
		"(ssh HOST which orted) or mpirun --prefix, and a route back to this host on the -mca btl_tcp_if_include interface"
	switch {
	case strings.Contains(s, "Could not resolve hostname"):
		fix = "a host name does not resolve: fix the -H list or hostfile, or /etc/hosts; then " + fix
	case strings.Contains(s, "Host key verification failed"):
		fix = "the remote host key is unknown: ssh-keyscan HOST >> ~/.ssh/known_hosts on this host; then " + fix
	case strings.Contains(s, "Permission denied"):
		fix = "ssh asks for a password: copy this host's public key to the remote (ssh-copy-id HOST); then " + fix
	case strings.Contains(s, "orted: command not found") || strings.Contains(s, "orted: No such file"):
		fix = "orted is not on the remote PATH: install the same Open MPI there or pass mpirun --prefix <dir>; then " + fix
	}
	for i := range c.failures {
		if c.failures[i].Kind == FailDaemons {
			c.failures[i].Evidence = appendBounded(c.failures[i].Evidence, s)
			if isSSHError(s) {
				c.failures[i].Fix = fix
			}
			return
		}
	}
	c.failures = append(c.failures, LaunchFailure{Kind: FailDaemons, Rank: -1,
		Summary: "mpirun could not start its daemons on every host", Evidence: []string{s}, Fix: fix})
}

func isSSHError(s string) bool {
	return strings.HasPrefix(s, "ssh:") ||
		strings.Contains(s, "Host key verification failed") ||
		strings.Contains(s, "Permission denied (publickey") ||
		strings.Contains(s, "orted: command not found") ||
		strings.Contains(s, "orted: No such file")
}

// signalled reads "mpirun noticed that process rank 1 with PID 0 on node vm
// exited on signal 9 (Killed)." (prterun in Open MPI 5 words it the same).
func (c *LaunchClassifier) signalled(s string) {
	f := LaunchFailure{Kind: FailRankSignal, Rank: -1, Summary: "a rank was killed by a signal", Evidence: []string{s}}
	_, rest, _ := strings.Cut(s, " noticed that process rank ")
	if n, err := strconv.Atoi(firstField(rest)); err == nil {
		f.Rank = n
	}
	if _, after, ok := strings.Cut(rest, " on node "); ok {
		f.Host = firstField(after)
	}
	if _, after, ok := strings.Cut(rest, "signal "); ok {
		f.Signal, _ = strconv.Atoi(firstField(after))
	}
	c.finishRank(f)
}

// srunError reads "srun: error: node1: task 3: Exited with exit code 1" and
// "srun: error: Unable to allocate resources: ...".
func (c *LaunchClassifier) srunError(s string) {
	who, rest, ok := strings.Cut(s, ": error:")
	if !ok {
		return
	}
	rest = strings.TrimSpace(rest)
	// Slurm 23+ names the node: "slurmstepd-NODE: error: ...".
	stepHost, _ := strings.CutPrefix(who, "slurmstepd-")
	if stepHost == who {
		stepHost = ""
	}
	if t, ok := srunMPIType(rest); ok {
		f := LaunchFailure{Kind: FailSrunMPI, Rank: -1, Evidence: []string{s},
			Summary: "srun cannot use the MPI plugin " + t,
			Fix:     "pass an MPI type this Slurm supports (srun --mpi=list), e.g. erdmakit nccl run --srun-mpi pmi2, or install Slurm's PMIx plugin and the PMIx library"}
		if t == "" {
			f.Summary = "srun cannot use the MPI plugin asked for"
		}
		if prev := c.last(FailSrunMPI); prev.Kind == FailSrunMPI {
			prev.Evidence = appendBounded(prev.Evidence, s)
			return
		}
		c.add(f)
		return
	}
	// slurmstepd could not exec the task: "execve(): PATH: No such file or
	// directory" (or Permission denied). The task then exits 2 (or 13),
	// which is this failure, not a rank of its own that failed.
	if v, ok := strings.CutPrefix(rest, "execve():"); ok {
		v = strings.TrimSpace(v)
		if prev := c.last(FailExecutable); prev.Kind == FailExecutable {
			prev.Evidence = appendBounded(prev.Evidence, s)
			return
		}
		f := LaunchFailure{Kind: FailExecutable, Rank: -1, Evidence: []string{s}, Host: stepHost,
			Summary: "srun could not execute " + v,
			Fix:     "build nccl-tests (make MPI=1) at the same path on every node, or pass --binary with an absolute path that exists on all nodes"}
		// srun's "task N: Exited with exit code 2" may have come first
		// (stdout and stderr are read apart): a task exiting with ENOENT or
		// EACCES is this failure's consequence, not a failure of its own.
		kept := c.failures[:0]
		for _, p := range c.failures {
			if p.Kind == FailRankExit && (p.ExitCode == 2 || p.ExitCode == 13) {
				f.Evidence = appendBounded(f.Evidence, p.Evidence...)
				if f.Host == "" {
					f.Host = p.Host
				}
				continue
			}
			kept = append(kept, p)
		}
		c.failures = kept
		c.add(f)
		return
	}
	if strings.HasPrefix(rest, "Unable to allocate resources") {
		c.add(LaunchFailure{Kind: FailAllocation, Rank: -1, Summary: "Slurm could not allocate the nodes",
			Evidence: []string{s},
			Fix:      "check the partition, node names (--nodelist) and node counts against sinfo, or run inside an allocation (salloc)"})
		return
	}
	parts := strings.SplitN(rest, ": ", 3)
	if len(parts) < 3 || !strings.HasPrefix(parts[1], "task") {
		return
	}
	f := LaunchFailure{Kind: FailRankExit, Rank: -1, Host: parts[0], Evidence: []string{s}}
	task := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(parts[1], "tasks"), "task"))
	first, _, _ := strings.Cut(task, "-")
	first, _, _ = strings.Cut(first, ",")
	if n, err := strconv.Atoi(first); err == nil {
		f.Rank = n
	}
	switch {
	case strings.Contains(parts[2], "Exited with exit code"):
		f.ExitCode = lastInt(parts[2])
	case strings.Contains(parts[2], "Killed") || strings.Contains(parts[2], "signal"):
		f.Kind = FailRankSignal
		f.Signal = lastInt(parts[2])
	default:
		return
	}
	if prev := c.last(FailExecutable); prev.Kind == FailExecutable {
		// The task exits because it could not be executed: evidence of that.
		prev.Evidence = appendBounded(prev.Evidence, s)
		if prev.Host == "" {
			prev.Host = f.Host
		}
		return
	}
	c.finishRank(f)
}

func (c *LaunchClassifier) completeRank(f LaunchFailure) LaunchFailure {
	if f.Host == "" && f.Rank >= 0 {
		f.Host = c.hostOf(f.Rank)
	}
	where := "rank ?"
	if f.Rank >= 0 {
		where = "rank " + strconv.Itoa(f.Rank)
	}
	if f.Host != "" {
		where += " on " + f.Host
	}
	if f.Kind == FailRankSignal {
		f.Summary = where + " was killed"
		if f.Signal > 0 {
			f.Summary += " by signal " + strconv.Itoa(f.Signal)
		}
	} else {
		f.Summary = where + " exited with code " + strconv.Itoa(f.ExitCode)
	}
	f.Fix = "read that rank's output above its exit (Test NCCL failure / Test CUDA failure lines, NCCL WARN); " +
		"rerun with NCCL_DEBUG=INFO and check that host with erdmakit doctor"
	return f
}

// RankFailed notes that rank printed an nccl-tests failure ("Test NCCL
// failure", "Test CUDA failure"; the runner knows the rank from mpirun's
// --tag-output).
func (c *LaunchClassifier) RankFailed(rank int) {
	if slices.Contains(c.failedRanks, rank) || len(c.failedRanks) >= maxEvidence {
		return
	}
	c.failedRanks = append(c.failedRanks, rank)
}

// abortedRank is the failure behind mpirun's abort banner when mpirun did
// not print the block naming the rank: when the banner counts one process,
// the only rank that printed an nccl-tests failure is that process, and
// mpirun's own exit status is its code.
func (c *LaunchClassifier) abortedRank() LaunchFailure {
	f := LaunchFailure{Kind: FailRankExit, Rank: -1, Evidence: []string{c.aborted}}
	if len(c.failedRanks) == 1 && c.LauncherExit > 0 && strings.Contains(c.aborted, "but 1 process returned") {
		f.Rank, f.ExitCode = c.failedRanks[0], c.LauncherExit
		f.Evidence = append(f.Evidence, fmt.Sprintf("rank %d alone printed an nccl-tests failure; mpirun exited %d", f.Rank, f.ExitCode))
		return c.completeRank(f)
	}
	f.Summary = "a rank exited with a non-zero status (mpirun did not say which)"
	f.Fix = "read the ranks' output before the abort (Test NCCL failure / Test CUDA failure lines, NCCL WARN); " +
		"rerun with NCCL_DEBUG=INFO and check the hosts with erdmakit doctor"
	return f
}

// finishRank keeps a rank's failure; Failures completes it.
func (c *LaunchClassifier) finishRank(f LaunchFailure) {
	c.failures = append(c.failures, f)
}

func (c *LaunchClassifier) hostOf(rank int) string {
	if h := c.rankHosts[rank]; h != "" {
		return h
	}
	if c.HostOfRank != nil {
		return c.HostOfRank(rank)
	}
	return ""
}

// rankHost reads nccl-tests' "#  Rank  6 Group  0 Pid   6905 on host device  6 ..."
// (and NCCL 1.x "#   Rank  0 on node03 device 0").
func (c *LaunchClassifier) rankHost(s string) {
	f := strings.Fields(strings.TrimPrefix(s, "#"))
	if len(f) < 4 || f[0] != "Rank" {
		return
	}
	rank, err := strconv.Atoi(f[1])
	if err != nil || rank < 0 {
		return
	}
	for i := 2; i+1 < len(f); i++ {
		if f[i] == "on" {
			if c.rankHosts == nil {
				c.rankHosts = make(map[int]string)
			}
			if len(c.rankHosts) < 1<<16 {
				c.rankHosts[rank] = f[i+1]
			}
			return
		}
	}
}

// processNameRank reads "Process name: [[56171,1],6]" -> 6.
func processNameRank(s string) int {
	i := strings.LastIndex(s, ",")
	if i < 0 {
		return -1
	}
	rest := s[i+1:]
	if k := strings.IndexByte(rest, ']'); k >= 0 {
		rest = rest[:k]
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], ".,;:)")
}

// lastInt returns the last whole number in s, 0 if none.
func lastInt(s string) int {
	f := strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

func appendBounded(dst []string, s ...string) []string {
	for _, x := range s {
		if len(dst) >= maxEvidence {
			return dst
		}
		dst = append(dst, x)
	}
	return dst
}

// srunMPIType recognises srun's and slurmd's words for an MPI plugin that
// cannot be loaded, and returns the plugin's name when they give it.
func srunMPIType(msg string) (string, bool) {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "invalid mpi type"):
		if _, q, ok := strings.Cut(msg, "'"); ok {
			t, _, _ := strings.Cut(q, "'")
			return t, true
		}
		return "", true
	case strings.Contains(l, "can not load pmix library"), strings.Contains(l, "cannot load pmix library"):
		return "pmix", true
	case strings.Contains(l, "cannot find mpi plugin for mpi/"),
		strings.Contains(l, "couldn't find the specified plugin name for mpi/"),
		strings.Contains(l, "cannot create context for mpi/"):
		_, t, _ := strings.Cut(l, "mpi/")
		t = strings.TrimSpace(strings.Fields(t + " ")[0])
		return t, true
	}
	return "", false
}

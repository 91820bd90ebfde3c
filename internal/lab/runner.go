package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// The lab network: one /24, role a (and the single VM) is .1, role b is .2.
const (
	IPA    = "10.0.9.1"
	IPB    = "10.0.9.2"
	MACA   = "52:54:00:00:09:01"
	MACB   = "52:54:00:00:09:02"
	Device = "rxe0"
	Netdev = "eth0"
)

// Options configure a lab run.
type Options struct {
	ModuleRoot string        // the checkout (holds go.mod)
	Packages   []string      // dirs relative to ModuleRoot ("./ibverbs" or "ibverbs"); empty: every suite found
	Run        string        // -test.run for single-VM tests; "" means ^TestLab
	Bench      string        // -test.bench; "" runs no benchmarks
	Timeout    time.Duration // per test binary in the guest; 0 means 240 s
	WorkDir    string        // host dir for binaries, scripts and logs; "" makes a temp dir
	Kernel     string        // kernel version; "" picks the installed one
	Qemu       string        // qemu binary; "" is qemu-system-x86_64
	Console    io.Writer     // every guest console line (nil: none)
	Progress   io.Writer     // one line per boot and per package (nil: none)
	Strict     bool          // skips count as failures (CI)
	Sequential bool          // boot the two-VM pair after the one-VM run, not alongside it
	CI         string        // passed to the guest's CI variable
	ICount     string        // qemu -icount for every VM (VM.ICount); "" for none
	CPUs       int           // vCPUs of every VM (VM.CPUs); 0 for 1
}

func (o *Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return 240 * time.Second
	}
	return o.Timeout
}

// synced returns o with Progress and Console safe for the VMs' goroutines
// to write at once.
func (o Options) synced() Options {
	o.Progress = syncWriter(o.Progress)
	o.Console = syncWriter(o.Console)
	return o
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func syncWriter(w io.Writer) io.Writer {
	if _, ok := w.(*lockedWriter); ok || w == nil {
		return w
	}
	return &lockedWriter{w: w}
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "lab: "+format+"\n", args...)
	}
}

// Env is what a run boots with: the kernel, the initramfs and the work dir.
type Env struct {
	Kernel    Kernel
	Initramfs string
	WorkDir   string
	Qemu      string
}

// Prepare checks that the lab can start here (qemu, kernel, modules,
// busybox) and builds the initramfs in the work dir. Every failure wraps
// ErrUnavailable.
func Prepare(ctx context.Context, o *Options) (*Env, error) {
	qemu := o.Qemu
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	if _, err := exec.LookPath(qemu); err != nil {
		return nil, fmt.Errorf("%w: %s not found (install qemu-system-x86)", ErrUnavailable, qemu)
	}
	k, err := FindKernel("/", o.Kernel)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(o.ModuleRoot, " \t\n") {
		return nil, fmt.Errorf("%w: the checkout path %q has white space, which the guest's kernel command line cannot carry", ErrUnavailable, o.ModuleRoot)
	}
	work := o.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "erdmakit-lab-"); err != nil {
			return nil, fmt.Errorf("lab work dir: %w", err)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("lab work dir: %w", err)
	}
	for _, d := range []string{"bin", "out"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o777); err != nil {
			return nil, fmt.Errorf("lab work dir: %w", err)
		}
	}
	ir := filepath.Join(work, "initramfs.cpio")
	if err := BuildInitramfs(ctx, k, ir); err != nil {
		return nil, err
	}
	return &Env{Kernel: k, Initramfs: ir, WorkDir: work, Qemu: qemu}, nil
}

// SuiteRun is one test binary's run in one VM.
type SuiteRun struct {
	Suite    string        `json:"package"`
	Role     string        `json:"role"`
	ExitCode int           `json:"exit_code"` // -1: never ran or never ended (VM died)
	Elapsed  time.Duration `json:"elapsed_ns"`
	Log      string        `json:"log"` // host path of its -test.v output
	Output   *TestOutput   `json:"output"`
	Err      string        `json:"error,omitempty"`
}

// Failed reports whether the run counts as a failure.
func (r SuiteRun) Failed(strict bool) bool {
	return r.ExitCode != 0 || r.Err != "" || r.Output == nil || r.Output.Failed(strict) ||
		(strict && len(r.Output.Tests) == 0 && len(r.Output.Benchmarks) == 0)
}

// Summary is a whole lab run.
type Summary struct {
	Runs     []SuiteRun               `json:"runs"`
	Boots    map[string]time.Duration `json:"boot_ns"` // role -> qemu start to READY
	VMTime   map[string]time.Duration `json:"vm_ns"`   // role -> qemu start to exit
	BuildDur time.Duration            `json:"build_ns"`
	Total    time.Duration            `json:"total_ns"`
	WorkDir  string                   `json:"work_dir"`
}

// Failed reports whether any suite run failed.
func (s *Summary) Failed(strict bool) bool {
	for _, r := range s.Runs {
		if r.Failed(strict) {
			return true
		}
	}
	return false
}

// SelectSuites filters suites by dir names ("./ibverbs", "ibverbs"). A name
// without lab tests is an error.
func SelectSuites(all []Suite, names []string) ([]Suite, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Suite
	for _, n := range names {
		n = strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(n), "./"), "/")
		found := false
		for _, s := range all {
			if s.Dir == n {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("package %s has no lab tests (files tagged `lab` with func TestLab...)", n)
		}
	}
	return out, nil
}

// BuildSuites compiles each suite's test binary with the lab tag into
// bindir/<id>.test on the host.
func BuildSuites(ctx context.Context, root, bindir string, suites []Suite) error {
	for _, s := range suites {
		out := filepath.Join(bindir, s.ID()+".test")
		cmd := execx.Command(ctx, "go", "test", "-c", "-tags", "lab", "-o", out, "./"+s.Dir)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build lab tests of ./%s: %w\n%s", s.Dir, err, strings.TrimSpace(string(b)))
		}
	}
	return nil
}

// Run builds and runs the lab tests: every single-VM suite in one VM, then
// every two-VM suite in a pair of VMs. The error is about the lab itself
// (it could not build or boot); test failures are in the Summary.
func Run(ctx context.Context, o Options) (*Summary, error) {
	start := time.Now()
	o = o.synced()
	all, err := Discover(o.ModuleRoot)
	if err != nil {
		return nil, err
	}
	suites, err := SelectSuites(all, o.Packages)
	if err != nil {
		return nil, err
	}
	if len(suites) == 0 {
		return nil, fmt.Errorf("no lab tests under %s", o.ModuleRoot)
	}
	var single, pair []Suite
	for _, s := range suites {
		st, pt, err := s.Matching(o.Run)
		if err != nil {
			return nil, err
		}
		if len(st) > 0 || (o.Bench != "" && s.Bench) {
			single = append(single, s)
		}
		if len(pt) > 0 {
			pair = append(pair, s)
		}
	}
	if len(single)+len(pair) == 0 {
		return nil, fmt.Errorf("no lab test matches -run %q", o.Run)
	}
	var build []Suite
	for _, s := range suites {
		if contains(single, s.Dir) || contains(pair, s.Dir) {
			build = append(build, s)
		}
	}
	env, err := Prepare(ctx, &o)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Boots: map[string]time.Duration{}, VMTime: map[string]time.Duration{}, WorkDir: env.WorkDir}
	o.progress("building %d test binaries", len(build))
	b0 := time.Now()
	if err := BuildSuites(ctx, o.ModuleRoot, filepath.Join(env.WorkDir, "bin"), build); err != nil {
		return nil, err
	}
	sum.BuildDur = time.Since(b0)

	run := o.Run
	if run == "" {
		run = "^TestLab"
	}
	// The one-VM run and the two-VM run are independent: by default they
	// run at the same time (three VMs), which on a 2-core machine takes far
	// less than one after the other.
	var singleBoots, pairBoots []*Boot
	var singleErr, pairErr error
	var wg sync.WaitGroup
	if len(single) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steps := o.testSteps(env, RoleSingleName, single, func(Suite) []string {
				return []string{"-test.run", run, "-test.skip", "^TestLab2Host"}
			}, o.Bench)
			singleBoots, singleErr = o.boot(ctx, env, []Guest{o.guest(RoleSingleName, IPA, "")}, [][]Step{steps})
		}()
		if o.Sequential {
			wg.Wait()
		}
	}
	if len(pair) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := func(s Suite) []string { return []string{"-test.run", pairRun(s, o.Run)} }
			sa := o.testSteps(env, "a", pair, args, "")
			sb := o.testSteps(env, "b", pair, args, "")
			pairBoots, pairErr = o.bootPair(ctx, env, sa, sb)
		}()
	}
	wg.Wait()
	o.collect(sum, singleBoots, env, RoleSingleName, single)
	o.collect(sum, pairBoots, env, "a", pair)
	o.collect(sum, pairBoots, env, "b", pair)
	sum.Total = time.Since(start)
	if err := errors.Join(singleErr, pairErr); err != nil {
		return sum, err
	}
	return sum, nil
}

// RoleSingleName is the role of the one-VM run.
const RoleSingleName = "single"

func (o *Options) guest(role, ip, peer string) Guest {
	return Guest{Role: role, IP: ip, Peer: peer, Device: Device, Netdev: Netdev, CI: o.CI}
}

// pairRun is the -test.run of a suite in the two-VM run: exactly its
// TestLab2Host tests that pattern selects, and the pattern's subtest part.
func pairRun(s Suite, pattern string) string {
	_, names, _ := s.Matching(pattern)
	for i, n := range names {
		names[i] = regexp.QuoteMeta(n)
	}
	run := "^(" + strings.Join(names, "|") + ")$"
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		run += pattern[i:]
	}
	return run
}

func (o *Options) testSteps(env *Env, role string, suites []Suite, args func(Suite) []string, bench string) []Step {
	var steps []Step
	t := o.timeout()
	for _, s := range suites {
		argv := []string{GuestLab + "/bin/" + s.ID() + ".test", "-test.v", "-test.timeout", fmt.Sprintf("%ds", int((t - 10*time.Second).Seconds()))}
		argv = append(argv, args(s)...)
		if bench != "" && s.Bench {
			argv = append(argv, "-test.bench", bench, "-test.benchmem")
		}
		steps = append(steps, Step{
			ID:      s.ID(),
			Dir:     filepath.Join(o.ModuleRoot, s.Dir),
			Argv:    argv,
			Log:     GuestLab + "/out/" + role + "/" + s.ID() + ".log",
			OutDir:  GuestLab + "/out/" + role + "/" + s.ID(),
			Timeout: t,
		})
	}
	return steps
}

// bootPair boots VMs a and b joined by the lab link, each with its steps;
// when their link carries nothing it boots the pair once more.
func (o *Options) bootPair(ctx context.Context, env *Env, stepsA, stepsB []Step) ([]*Boot, error) {
	guests := []Guest{o.guest("a", IPA, IPB), o.guest("b", IPB, IPA)}
	boots, err := o.boot(ctx, env, guests, [][]Step{stepsA, stepsB})
	if errors.Is(err, ErrNoLink) && ctx.Err() == nil {
		o.progress("vm a and vm b could not reach each other: booting the pair again")
		boots, err = o.boot(ctx, env, guests, [][]Step{stepsA, stepsB})
	}
	return boots, err
}

// ErrNoLink: the two VMs booted but could not reach each other over the
// lab link (a guest printed MarkerNoLink); both were stopped.
var ErrNoLink = errors.New("lab: the two VMs could not reach each other")

// boot runs one VM per guest (two: joined by a socket netdev), each with its
// steps, and waits for all of them. When a guest finds no link to its peer,
// every VM is stopped and the error wraps ErrNoLink.
func (o *Options) boot(ctx context.Context, env *Env, guests []Guest, steps [][]Step) ([]*Boot, error) {
	synced := o.synced() // each VM's markers and console lines arrive on its own goroutine
	o = &synced
	var total time.Duration
	for _, s := range steps[0] {
		total += s.Timeout + 5*time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, total+3*time.Minute)
	defer cancel()
	var noLink atomic.Bool
	onMarker := func(vm string, m Marker) {
		o.onMarker(vm, m)
		if m.Word == MarkerNoLink && !noLink.Swap(true) {
			cancel()
		}
	}
	vms := make([]VM, len(guests))
	for i, g := range guests {
		if err := os.MkdirAll(filepath.Join(env.WorkDir, "out", g.Role), 0o777); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		script := "run-" + g.Role + ".sh"
		if err := os.WriteFile(filepath.Join(env.WorkDir, script), []byte(Script(g, steps[i])), 0o755); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		vms[i] = VM{Name: g.Role, Qemu: env.Qemu, Kernel: env.Kernel, Initramfs: env.Initramfs, WorkDir: env.WorkDir, Script: script, Keep: keepDirs(o.ModuleRoot), ICount: o.ICount, CPUs: o.CPUs}
	}
	var link string
	if len(vms) == 2 {
		ports, err := FreeLoopbackUDPPorts(2)
		if err != nil {
			return nil, err
		}
		a, b := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
		link = fmt.Sprintf("UDP %s and %s", a, b)
		vms[0].Net = Net{Local: a, Remote: b, MAC: MACA}
		vms[1].Net = Net{Local: b, Remote: a, MAC: MACB}
	}
	boots := make([]*Boot, len(vms))
	errs := make([]error, len(vms))
	var wg sync.WaitGroup
	for i := range vms {
		o.progress("booting vm %s", vms[i].Name)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var con io.Writer
			if o.Console != nil {
				con = &prefixWriter{w: o.Console, prefix: "[" + vms[i].Name + "] "}
			}
			boots[i], errs[i] = vms[i].Run(ctx, con, func(m Marker) { onMarker(vms[i].Name, m) })
		}(i)
	}
	wg.Wait()
	if noLink.Load() {
		return boots, fmt.Errorf("%w (%s and %s over %s)", ErrNoLink, guests[0].IP, guests[1].IP, link)
	}
	return boots, errors.Join(errs...)
}

func (o *Options) onMarker(vm string, m Marker) {
	switch m.Word {
	case "READY":
		o.progress("vm %s up in %s", vm, m.At.Round(100*time.Millisecond))
	case "LINK":
		o.progress("vm %s reached its peer (%s)", vm, strings.Join(m.Args, " "))
	case MarkerNoLink:
		o.progress("vm %s: its peer never answered on the lab link (%s)", vm, strings.Join(m.Args, " "))
	case "FATAL":
		o.progress("vm %s: FATAL %s", vm, strings.Join(m.Args, " "))
	case "BEGIN":
		o.progress("vm %s: running %s", vm, strings.Join(m.Args, " "))
	case "END":
		o.progress("vm %s: %s exited %s (at %s)", vm, firstArg(m.Args, 0), firstArg(m.Args, 1), m.At.Round(100*time.Millisecond))
	}
	slog.Debug("lab marker", "vm", vm, "word", m.Word, "args", m.Args)
}

func firstArg(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

// collect turns the boot's markers and the logs in the work dir into suite runs.
func (o *Options) collect(sum *Summary, boots []*Boot, env *Env, role string, suites []Suite) {
	var boot *Boot
	for _, b := range boots {
		if b != nil && b.Name == role {
			boot = b
		}
	}
	if boot != nil {
		sum.Boots[role] = boot.BootTime
		sum.VMTime[role] = boot.Elapsed
	}
	for _, s := range suites {
		r := SuiteRun{Suite: s.Dir, Role: role, ExitCode: -1, Log: filepath.Join(env.WorkDir, "out", role, s.ID()+".log")}
		var began time.Duration
		if boot != nil {
			for _, m := range boot.Markers {
				if len(m.Args) == 0 || m.Args[0] != s.ID() {
					continue
				}
				switch m.Word {
				case "BEGIN":
					began = m.At
				case "END":
					r.Elapsed = m.At - began
					if len(m.Args) > 1 {
						fmt.Sscanf(m.Args[1], "%d", &r.ExitCode)
					}
				}
			}
		}
		switch {
		case r.ExitCode == 124 || r.ExitCode == 137:
			r.Err = fmt.Sprintf("timed out after %s (guest `timeout`)", o.timeout())
		case r.ExitCode == -1:
			r.Err = "never finished: the VM stopped before the binary ended"
		}
		if f, err := os.Open(r.Log); err == nil {
			r.Output, _ = ParseTestOutput(f)
			f.Close()
		} else if r.Err == "" {
			r.Err = "no test output: " + err.Error()
		}
		sum.Runs = append(sum.Runs, r)
	}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

func contains(suites []Suite, dir string) bool {
	for _, s := range suites {
		if s.Dir == dir {
			return true
		}
	}
	return false
}

// keepDirs is root when it lies under a directory the guest covers with a
// tmpfs (/tmp, /run, /var/tmp), so the guest binds it back in place.
func keepDirs(root string) []string {
	for _, p := range []string{"/tmp", "/run", "/var/tmp"} {
		if root == p || strings.HasPrefix(root, p+"/") {
			return []string{root}
		}
	}
	return nil
}

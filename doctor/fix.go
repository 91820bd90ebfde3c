package doctor

import (
	"context"
	"errors"
	"fmt"
	pathpkg "path"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/hostconf"
	"github.com/erdmakit/erdmakit/internal/netdev"
	"github.com/erdmakit/erdmakit/internal/shq"
)

// Setup stages, in the guide's order. A Fix belongs to one; the cloud and
// verify stages have no doctor fix (package eri and package setup own them).
// The host stages' names are erdma's, so that a host check names the stage
// that fixes it (erdma.HostCheck.FixedBy).
const (
	StageCloud  = "cloud"
	StageDriver = erdma.StageDriver
	StageOS     = erdma.StageOS
	StageGPU    = erdma.StageGPU
	StageLimits = erdma.StageLimits
	StageVerify = "verify"
)

// Stages lists the setup stages in order.
func Stages() []string {
	return []string{StageCloud, StageDriver, StageOS, StageGPU, StageLimits, StageVerify}
}

// ErrFix is what a fix that cannot be planned or applied wraps.
var ErrFix = errors.New("fix failed")

// ErrInvalidValue is what a value from outside that cannot be configured
// wraps: a netdev name the kernel would not allow, a MAC that is not six
// hex bytes, an address that is not IPv4, a prefix or gateway outside the
// subnet (from the host, the metadata service or a flag). Nothing is
// planned around it: setup exits 3 naming it.
var ErrInvalidValue = netdev.ErrInvalid

// A Fix changes the host so that its check passes: the check and its fix
// are one unit (Check.Fix). Plan compares what is there with what the
// guide wants and returns only the difference, each change as the command a
// person would type; it changes nothing. Apply (doctor.Apply) makes the
// planned changes; the check, run again, is the verify. A failing check
// with a Fix carries the fix's plan beside its own remediation
// (health.Finding.Fix, what Finding.Step prints first), so the advice and
// the action cannot drift and neither overwrites the other. A host check
// names its fix's stage where it is declared (erdma.HostCheck.FixedBy).
//
// Several checks may share one Fix (netdev-ip and mtu: the os stage);
// setup and doctor --fix run it once.
type Fix struct {
	Stage string
	// Title says what the fix makes true ("memlock unlimited, persisted").
	Title string
	Plan  func(ctx context.Context, in *Input, env *FixEnv) (*Plan, error)
}

// FixEnv is what fixes act through: one place for files, one for commands.
// Tests point Root at an overlay root; Describe plans without asking any
// outside source (the doctor's remediation text).
type FixEnv struct {
	// Root is where configuration files are read and written ("" means the
	// host's root). Every path is resolved inside it (os.Root): a symlink
	// leading out of it is refused, never followed.
	Root string
	// BackupDir is where previous versions are kept, relative to Root (""
	// means /var/lib/erdmakit/setup/backup); Stamp names this run's
	// directory there ("" means "previous").
	BackupDir, Stamp string
	// Describe: plan for advice only (no metadata lookup, no netlink
	// read beyond the inventory); nothing is ever applied from it.
	Describe bool
	// Metadata gives the ERI addresses (os stage); nil means the real
	// service.
	Metadata *erdma.MetadataClient
	// Netdevs names the ERI netdevs to configure (os stage); empty means
	// the netdevs of the eRDMA devices.
	Netdevs []string
	// NetworkStack forces how the os stage persists ("networkmanager",
	// "netplan", "ifcfg", "networkd"); "" detects it.
	NetworkStack string
	// Run runs a command (modprobe, the driver installer); nil means
	// internal/execx under ctx, and then only on the live host: a recorded
	// or directory root gets files only, never a module, netlink, sysctl or
	// service command on the machine erdmakit runs on.
	Run func(ctx context.Context, argv []string) error
	// InstallDriver lets the driver stage run the guide's installer.
	InstallDriver bool
	// ReloadDriver lets the driver stage reload erdma to apply compat mode
	// (it takes the eRDMA devices down for a moment).
	ReloadDriver bool
}

func (e *FixEnv) files(in *Input) *hostconf.Files {
	root := e.Root
	if root == "" && in != nil {
		root = in.Host.Root()
	}
	return &hostconf.Files{Root: root, BackupDir: e.BackupDir, Stamp: e.Stamp}
}

// commands reports whether the fixes may run commands: on the live host,
// or through the caller's own Run.
func (e *FixEnv) commands(in *Input) bool {
	return !e.Describe && (in.Host.Live() || e.Run != nil)
}

// NoLiveChanges is the note of a stage on a recorded or directory root.
const NoLiveChanges = "a recorded or directory root: plan and files only; no module, netlink, sysctl or service command is run on this machine"

func (e *FixEnv) run(ctx context.Context, argv []string) error {
	if e.Run != nil {
		return e.Run(ctx, argv)
	}
	out, err := execx.Command(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", shq.Join(argv...), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// FileChange is one configuration file's planned (and, once applied, made)
// change. Path is as the host sees it ("/etc/security/limits.d/...").
type FileChange struct {
	Path string `json:"path"`
	// Action: "create" (absent: written whole), "update" (erdmakit's own,
	// rewritten), "block" (someone else's: a marked block added or
	// replaced), "unchanged".
	Action string `json:"action"`
	// Content is the whole file as it will be.
	Content string `json:"content"`
	// Backup is where the previous version was kept ("" when there was
	// none or nothing was written yet).
	Backup string `json:"backup,omitempty"`
	// Revert is the command that undoes the change (shell-quoted).
	Revert string `json:"revert,omitempty"`
}

// Kinds of Change.
const (
	KindFile    = "file"    // a configuration file (File says how)
	KindNetlink = "netlink" // a live network change
	KindCommand = "command" // a program run (modprobe, the installer)
	KindProcess = "process" // this process's own state (its memlock limit)
)

// Change is one planned change to the host.
type Change struct {
	Stage string `json:"stage"`
	// Checks are the doctor checks this change serves.
	Checks []string `json:"checks"`
	Kind   string   `json:"kind"`
	// Target is what changes: a path, a netdev, a module.
	Target string `json:"target"`
	// Command is what a person would type to make the same change.
	Command string `json:"command"`
	// File is the file change (Kind file): action, content, backup, revert.
	File *FileChange `json:"file,omitempty"`
	// Revert undoes the change, where there is a command for it.
	Revert string `json:"revert,omitempty"`
	// Done: applied. Error: applying failed.
	Done  bool   `json:"done"`
	Error string `json:"error,omitempty"`
	apply func(ctx context.Context) error
}

// Plan is what a fix would change, and what it found and cannot change.
type Plan struct {
	Stage string `json:"stage"`
	// Found says what is there now, in words.
	Found   []string `json:"found"`
	Changes []Change `json:"changes"`
	// Notes are what a person must know or do after the changes
	// (restart sessions to get the new memlock).
	Notes []string `json:"notes"`
	// Blocked says why the stage cannot complete ("" when it can); Next is
	// the exact step that unblocks it.
	Blocked string `json:"blocked,omitempty"`
	Next    string `json:"next,omitempty"`
	// blockedFor are the checks Blocked and Next are about; nil: every
	// check of the stage.
	blockedFor []string
}

// NewPlan is an empty plan of a stage (every list empty, never null in
// JSON): the one way a Plan is made, by the doctor's fixes and by setup's
// cloud and verify stages alike.
func NewPlan(stage string) *Plan {
	return &Plan{Stage: stage, Found: []string{}, Changes: []Change{}, Notes: []string{}}
}

func (p *Plan) add(c Change) {
	c.Stage = p.Stage
	if c.Checks == nil {
		c.Checks = []string{}
	}
	p.Changes = append(p.Changes, c)
}

// AddFile plans a configuration file under env's root (see FixEnv.Root):
// nothing when it is as wanted; a file erdmakit did not create gets a block
// tagged tag where blockOK, else an error. checks are the doctor checks it
// serves; perm is a new file's mode before the umask.
func (p *Plan) AddFile(env *FixEnv, checks []string, path, body, tag string, blockOK bool, perm uint32) error {
	return p.addFile(env.files(nil), checks, path, body, tag, blockOK, perm)
}

func (p *Plan) addFile(files *hostconf.Files, checks []string, path, body, tag string, blockOK bool, perm uint32) error {
	fc, err := files.PlanFile(path, body, tag, blockOK, fsMode(perm))
	if err != nil {
		return err
	}
	if fc.Action == hostconf.Unchanged {
		p.Found = append(p.Found, path+": as wanted")
		return nil
	}
	cmd := fileCommand(path, body, fc.Action)
	df := &FileChange{Path: fc.Path, Action: fc.Action, Content: fc.Content}
	c := Change{Checks: checks, Kind: KindFile, Target: path, Command: cmd, File: df}
	c.apply = func(context.Context) error {
		err := files.Apply(&fc)
		df.Backup, df.Revert = fc.Backup, fc.Revert
		return err
	}
	p.add(c)
	return nil
}

// AddGenerated plans a file erdmakit generates whole (an NCCL graph: no
// header, no marked block) under env's root: nothing when it already has
// data. command is what a person would type to make it.
func (p *Plan) AddGenerated(env *FixEnv, checks []string, path string, data []byte, command string) error {
	files := env.files(nil)
	old, ok, err := files.Read(path)
	if err != nil {
		return err
	}
	if ok && old == string(data) {
		p.Found = append(p.Found, path+": as wanted")
		return nil
	}
	action := hostconf.Create
	if ok {
		action = hostconf.Update
	}
	df := &FileChange{Path: path, Action: action, Content: string(data)}
	c := Change{Checks: checks, Kind: KindFile, Target: path, Command: command, File: df}
	if !ok {
		c.Revert = shq.Join("rm", path)
	}
	c.apply = func(context.Context) error {
		if err := files.Put(path, data, 0o644); err != nil {
			return err
		}
		df.Revert = c.Revert
		return nil
	}
	p.add(c)
	return nil
}

// AddChange plans a change that another package applies (setup's verify
// stage): apply runs under doctor.Apply like every other change.
func (p *Plan) AddChange(c Change, apply func(ctx context.Context) error) {
	c.apply = apply
	p.add(c)
}

// Commands is the plan as the commands a person would type, in order.
func (p *Plan) Commands() []string {
	out := make([]string, 0, len(p.Changes))
	for _, c := range p.Changes {
		out = append(out, c.Command)
	}
	return out
}

// Apply makes a plan's changes in order and stops at the first that fails
// (the error names it; a rerun plans again from what is there). Each change
// is atomic on its own: a file is old or new, a netlink change made or not.
func Apply(ctx context.Context, p *Plan) error {
	for i := range p.Changes {
		c := &p.Changes[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.apply == nil {
			continue
		}
		if err := c.apply(ctx); err != nil {
			c.Error = err.Error()
			return fmt.Errorf("%s: %s: %w: %w", p.Stage, c.Command, ErrFix, err)
		}
		c.Done = true
		if c.File != nil && c.File.Revert != "" {
			c.Revert = c.File.Revert
		}
	}
	return nil
}

// hostFixes are the fixes of the host stages, one per stage, in stage
// order. A host check takes the one of the stage it names
// (erdma.HostCheck.FixedBy; see HostChecks).
func hostFixes() []*Fix {
	return []*Fix{driverFix(), osFix(), gpuFix(), limitsFix()}
}

// StageFixes returns the fixes of the built-in checks, one per stage, in
// stage order, with the ids of the checks each serves.
func StageFixes() []StageFix {
	cs := builtins()
	var out []StageFix
	for _, stage := range Stages() {
		var sf StageFix
		for _, c := range cs {
			if c.Fix != nil && c.Fix.Stage == stage {
				sf.Fix = c.Fix
				sf.Checks = append(sf.Checks, c.ID)
			}
		}
		if sf.Fix != nil {
			out = append(out, sf)
		}
	}
	return out
}

// StageFix is one stage's fix and the checks it serves.
type StageFix struct {
	Fix    *Fix
	Checks []string
}

// PlanFixes plans the fixes of the failing (and warning) checks of a
// report: `doctor --fix`. Each fix is planned once, even when several of its
// checks fail.
func PlanFixes(ctx context.Context, h erdma.Host, rep *erdma.Report, opt Options, env *FixEnv) ([]*Plan, error) {
	in, err := inputFor(rep, h, opt)
	if err != nil {
		return nil, err
	}
	var plans []*Plan
	for _, sf := range StageFixes() {
		bad := false
		for _, f := range rep.Findings {
			if slices.Contains(sf.Checks, f.ID) && (f.Severity == health.Fail || f.Severity == health.Warn) {
				bad = true
			}
		}
		if !bad {
			continue
		}
		p, err := sf.Fix.Plan(ctx, in, env)
		if err != nil {
			return plans, fmt.Errorf("%s: %w: %w", sf.Fix.Stage, ErrFix, err)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// PlanStage plans one stage's fix on a host as it is now (setup's stages
// run whether or not their checks fail: persistence is part of them).
func PlanStage(ctx context.Context, h erdma.Host, rep *erdma.Report, opt Options, stage string, env *FixEnv) (*Plan, error) {
	in, err := inputFor(rep, h, opt)
	if err != nil {
		return nil, err
	}
	for _, sf := range StageFixes() {
		if sf.Fix.Stage == stage {
			return sf.Fix.Plan(ctx, in, env)
		}
	}
	return nil, fmt.Errorf("%w: no fix for stage %q", ErrOptions, stage)
}

// inputFor rebuilds a fix's input from a report the pipeline made. The
// report carries what the fixes need of the GPUs (rep.Host.GPU: the GDR
// path, DMA-BUF's refusal, the peer-memory module and its persistence): the
// GPUs are not read again (no second NVML session, no second DMA-BUF
// probe), so in.GPUs stays nil.
func inputFor(rep *erdma.Report, h erdma.Host, opt Options) (*Input, error) {
	if rep == nil || rep.Host == nil {
		return nil, fmt.Errorf("%w: no report", ErrOptions)
	}
	return &Input{Host: h, Inventory: rep.Host, Findings: rep.Findings, verbs: opt.Verbs, jumbo: opt.JumboFrames}, nil
}

// fixStep is what a failing check's fix says for it (health.Finding.Fix):
// the plan as commands, planned for description only, or the step the fix
// is blocked on. The fix speaks only where its plan is about this check (a
// change that serves it, or a block on it): the driver stage blocked on a
// missing eadm says nothing about compat mode. The check's own remediation
// is left as the check wrote it.
func fixStep(ctx context.Context, c Check, in *Input, f health.Finding) string {
	if c.Fix == nil || (f.Severity != health.Fail && f.Severity != health.Warn) {
		return ""
	}
	p, err := c.Fix.Plan(ctx, in, &FixEnv{Describe: true})
	if err != nil || p == nil {
		return ""
	}
	var cmds []string
	for _, ch := range p.Changes {
		if slices.Contains(ch.Checks, c.ID) || len(ch.Checks) == 0 {
			cmds = append(cmds, ch.Command)
		}
	}
	if len(cmds) == 0 {
		if p.Next != "" && (p.blockedFor == nil || slices.Contains(p.blockedFor, c.ID)) {
			return p.Next
		}
		return ""
	}
	s := "erdmakit doctor --fix (or: " + strings.Join(cmds, "; ") + ")"
	if len(p.Notes) > 0 {
		s += "; " + strings.Join(p.Notes, "; ")
	}
	return s
}

// fileCommand is a file change as a person would type it: a short file as
// printf, a longer one by name (its content is in the plan).
func fileCommand(path, body, action string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 4 || slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "'") }) {
		if action == hostconf.Block {
			return fmt.Sprintf("add a marked block of %d lines to %s", len(lines), shq.Quote(path))
		}
		return fmt.Sprintf("write %s (%s, %d lines)", shq.Quote(path), action, len(lines))
	}
	redir := ">"
	if action == hostconf.Block {
		redir = ">>"
	}
	cmd := fmt.Sprintf("printf '%%s\\n' '%s' %s %s", strings.Join(lines, "' '"), redir, shq.Quote(path))
	if action == hostconf.Create {
		cmd = "mkdir -p " + shq.Quote(pathpkg.Dir(path)) + " && " + cmd
	}
	return cmd
}

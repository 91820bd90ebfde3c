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
)

// Setup stages, in the guide's order. A Fix belongs to one; the cloud and
// verify stages have no doctor fix (package eri and package setup own them).
const (
	StageCloud  = "cloud"
	StageDriver = "driver"
	StageOS     = "os"
	StageGPU    = "gpu"
	StageLimits = "limits"
	StageVerify = "verify"
)

// Stages lists the setup stages in order.
func Stages() []string {
	return []string{StageCloud, StageDriver, StageOS, StageGPU, StageLimits, StageVerify}
}

// ErrFix is what a fix that cannot be planned or applied wraps.
var ErrFix = errors.New("fix failed")

// A Fix changes the host so that its check passes: the check and its fix
// are one unit (Check.Fix). Plan compares what is there with what the
// guide wants and returns only the difference, each change as the command a
// person would type; it changes nothing. Apply (doctor.Apply) makes the
// planned changes; the check, run again, is the verify. The remediation the
// doctor prints for a failing check with a Fix is its plan, so the advice
// and the action cannot drift.
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
// Tests point Files at an overlay root; Describe plans without asking any
// outside source (the doctor's remediation text).
type FixEnv struct {
	// Files writes configuration files; nil means the host root's.
	Files *hostconf.Files
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
	// internal/execx under ctx.
	Run func(ctx context.Context, argv []string) error
	// InstallDriver lets the driver stage run the guide's installer.
	InstallDriver bool
	// ReloadDriver lets the driver stage reload erdma to apply compat mode
	// (it takes the eRDMA devices down for a moment).
	ReloadDriver bool
}

func (e *FixEnv) files(in *Input) *hostconf.Files {
	if e.Files != nil {
		return e.Files
	}
	return &hostconf.Files{Root: in.Host.Root()}
}

func (e *FixEnv) run(ctx context.Context, argv []string) error {
	if e.Run != nil {
		return e.Run(ctx, argv)
	}
	out, err := execx.Command(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
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
	File *hostconf.FileChange `json:"file,omitempty"`
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
}

func newPlan(stage string) *Plan {
	return &Plan{Stage: stage, Found: []string{}, Changes: []Change{}, Notes: []string{}}
}

func (p *Plan) add(c Change) {
	c.Stage = p.Stage
	if c.Checks == nil {
		c.Checks = []string{}
	}
	p.Changes = append(p.Changes, c)
}

// AddFile plans a configuration file (through files: see hostconf): nothing
// when it is as wanted. checks are the doctor checks it serves.
func (p *Plan) AddFile(files *hostconf.Files, checks []string, path, body, tag string, blockOK bool, perm uint32) error {
	fc, err := files.PlanFile(path, body, tag, blockOK, fsMode(perm))
	if err != nil {
		return err
	}
	if fc.Action == hostconf.Unchanged {
		p.Found = append(p.Found, path+": as wanted")
		return nil
	}
	cmd := fileCommand(path, body, fc.Action)
	c := Change{Checks: checks, Kind: KindFile, Target: path, Command: cmd, File: &fc}
	c.apply = func(context.Context) error { return files.Apply(c.File) }
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

// fixes attaches the built-in fixes to the built-in checks, by check id.
func fixes() map[string]*Fix {
	os := osFix()
	drv := driverFix()
	return map[string]*Fix{
		erdma.FindingERDMADriver:   drv,
		erdma.FindingEadm:          drv,
		erdma.FindingTransportMode: drv,
		erdma.FindingNetdevIP:      os,
		erdma.FindingMTU:           os,
		erdma.FindingGDRPeermem:    gpuFix(),
		erdma.FindingMemlock:       limitsFix(),
	}
}

// StageFixes returns the fixes of the built-in checks, one per stage, in
// stage order, with the ids of the checks each serves.
func StageFixes() []StageFix {
	var out []StageFix
	for _, c := range builtins() {
		if c.Fix == nil {
			continue
		}
		i := slices.IndexFunc(out, func(s StageFix) bool { return s.Fix == c.Fix })
		if i < 0 {
			out = append(out, StageFix{Fix: c.Fix})
			i = len(out) - 1
		}
		out[i].Checks = append(out[i].Checks, c.ID)
	}
	order := Stages()
	slices.SortStableFunc(out, func(a, b StageFix) int {
		return slices.Index(order, a.Fix.Stage) - slices.Index(order, b.Fix.Stage)
	})
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
	in, err := inputFor(ctx, h, rep, opt)
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
	in, err := inputFor(ctx, h, rep, opt)
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

// inputFor rebuilds a check's input from a report the pipeline made.
func inputFor(ctx context.Context, h erdma.Host, rep *erdma.Report, opt Options) (*Input, error) {
	if rep == nil || rep.Host == nil {
		return nil, fmt.Errorf("%w: no report", ErrOptions)
	}
	in := &Input{Host: h, Inventory: rep.Host, Findings: rep.Findings, verbs: opt.Verbs}
	in.GPUs = GPUs(ctx, h, rep.Host, opt)
	return in, nil
}

// remediation is the advice of a failing check that has a fix: the fix's
// plan as commands, planned for description only.
func remediation(ctx context.Context, c Check, in *Input, f health.Finding) string {
	if c.Fix == nil || (f.Severity != health.Fail && f.Severity != health.Warn) {
		return f.Remediation
	}
	p, err := c.Fix.Plan(ctx, in, &FixEnv{Describe: true})
	if err != nil || p == nil {
		return f.Remediation
	}
	var cmds []string
	for _, ch := range p.Changes {
		if slices.Contains(ch.Checks, c.ID) || len(ch.Checks) == 0 {
			cmds = append(cmds, ch.Command)
		}
	}
	if len(cmds) == 0 {
		if p.Next != "" {
			return p.Next
		}
		return f.Remediation
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
			return fmt.Sprintf("add a marked block of %d lines to %s", len(lines), path)
		}
		return fmt.Sprintf("write %s (%s, %d lines)", path, action, len(lines))
	}
	redir := ">"
	if action == hostconf.Block {
		redir = ">>"
	}
	cmd := fmt.Sprintf("printf '%%s\\n' '%s' %s %s", strings.Join(lines, "' '"), redir, path)
	if action == hostconf.Create {
		cmd = "mkdir -p " + pathpkg.Dir(path) + " && " + cmd
	}
	return cmd
}

// Package setup is `erdmakit setup` as a library: Alibaba's eRDMA guide
// applied to a host, stage by stage (cloud, driver, os, gpu, limits,
// verify), planned first, then applied, persisted and proven.
//
// The host stages are the doctor's fixes (doctor.Fix): the check that finds
// a problem and the change that removes it are one unit, and `erdmakit
// doctor --fix` runs the same fixes for the failing checks only. This
// package orders them, stops at a stage that cannot complete, re-reads the
// host between stages, and proves the result (the doctor, then what the
// Verify hook measures).
package setup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/shq"
	"github.com/erdmakit/erdmakit/setup/setupresult"
)

// ErrOptions is what every invalid option wraps.
var ErrOptions = errors.New("invalid setup options")

// Stage statuses (setupresult's).
const (
	StatusUnchanged  = setupresult.StatusUnchanged
	StatusPlanned    = setupresult.StatusPlanned
	StatusChanged    = setupresult.StatusChanged
	StatusBlocked    = setupresult.StatusBlocked
	StatusFailed     = setupresult.StatusFailed
	StatusSkipped    = setupresult.StatusSkipped
	StatusNotReached = setupresult.StatusNotReached
)

// Verdicts of a run (setupresult's).
const (
	VerdictProven         = setupresult.VerdictProven
	VerdictProvenWarnings = setupresult.VerdictProvenWarnings
	VerdictNotProven      = setupresult.VerdictNotProven
	VerdictPlanned        = setupresult.VerdictPlanned
)

// Options tune a run. The zero value sets up this host with the doctor's
// defaults; DryRun plans only.
type Options struct {
	// Root is the host ("" or "/": this host; a directory: a root the file
	// changes go to, for tests and images; netlink then is not touched).
	Root string
	// DryRun plans every stage and changes nothing.
	DryRun bool
	// Only and Skip select stages by name (doctor.Stages()).
	Only, Skip []string
	// Doctor are the doctor's options for reading and judging the host
	// (its Verbs, verbsprobe.Live for the live verbs check, as erdmakit
	// setup runs it).
	Doctor doctor.Options
	// Fix is what the host stages act through (files, metadata, netdevs,
	// --install-driver, --reload-driver).
	Fix doctor.FixEnv
	// Cloud plans (and, unless DryRun, applies) the cloud stage; nil skips
	// it with a note. ERICloud is package eri's.
	Cloud Cloud
	// CloudSkipped, with Cloud nil, says why there is no cloud stage (no
	// credentials or RAM role): the stage's note.
	CloudSkipped string
	// VerifyOptions tune the verify stage: bw loopback on every eRDMA
	// device (a peer too), the NCCL environment file.
	VerifyOptions VerifyOptions
	// FailingOnly runs only the host stages one of whose checks warns or
	// fails, and no cloud stage: `erdmakit doctor --fix`.
	FailingOnly bool
	// Now stamps the backup directory; nil means time.Now.
	Now func() time.Time
}

// The result of a run is package setupresult's plain data, so that a
// package that shows it (report) needs not import setup.
type (
	// StageResult is one stage's outcome.
	StageResult = setupresult.Stage
	// Revert is how to undo one applied change.
	Revert = setupresult.Revert
	// Left is a check still not ok after the run, and its next step.
	Left = setupresult.Left
	// Result is a whole run.
	Result = setupresult.Result
)

// Selected reports the stages a run with only/skip makes, in order, or an
// error naming an unknown stage.
func Selected(only, skip []string) ([]string, error) {
	all := doctor.Stages()
	for _, s := range append(slices.Clone(only), skip...) {
		if !slices.Contains(all, s) {
			return nil, fmt.Errorf("%w: no stage %q (stages: %s)", ErrOptions, s, strings.Join(all, ", "))
		}
	}
	var out []string
	for _, s := range all {
		if (len(only) == 0 || slices.Contains(only, s)) && !slices.Contains(skip, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Run plans (DryRun) or applies every selected stage in the guide's order.
// A stage that cannot complete stops the run there (status blocked or
// failed, the result's Status fail); a rerun continues from there, since
// every stage plans from what the host has now. The error is for what
// stops the run before any judgment (bad options, an unreadable host, a
// cancelled context).
func Run(ctx context.Context, opt Options) (*Result, error) {
	stages, err := Selected(opt.Only, opt.Skip)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	h, closer, err := erdma.OpenHost(ctx, opt.Root)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	if !opt.DryRun && h.Source() != h.Root() {
		return nil, fmt.Errorf("%w: %s is an archive: there is nothing to apply changes to (plan with a dry run, or use a directory root)", ErrOptions, h.Source())
	}
	if opt.Fix.Root == "" {
		opt.Fix.Root = h.Root()
	}
	if opt.Fix.Stamp == "" {
		opt.Fix.Stamp = now().UTC().Format("20060102T150405Z")
	}
	quick := opt.Doctor
	quick.Interval = 0
	quick.Progress = nil
	rep, err := doctor.Run(ctx, h, quick)
	if err != nil {
		return nil, err
	}
	res := &Result{DryRun: opt.DryRun, Stages: []StageResult{}, Reverts: []Revert{}, Left: []Left{}, Status: health.OK}
	if opt.DryRun {
		res.ApplyWith = applyWith(h, opt.FailingOnly)
	}
	r := &runner{opt: &opt, h: h, quick: quick, rep: rep, res: res}
	stopped := false
	for _, name := range doctor.Stages() {
		sr := StageResult{Name: name, Found: []string{}, Changes: []setupresult.Change{}, Notes: []string{}}
		switch {
		case stopped:
			sr.Status = StatusNotReached
		case !slices.Contains(stages, name):
			sr.Status, sr.Notes = StatusSkipped, append(sr.Notes, "not selected (--only/--skip)")
		default:
			if stopped, err = r.stage(ctx, name, &sr); err != nil {
				return nil, err
			}
		}
		res.Stages = append(res.Stages, sr)
	}
	slices.Reverse(res.Reverts)
	res.Doctor = r.rep
	res.Left = left(res, r.rep)
	res.Status, res.Verdict = verdict(res, r.rep)
	return res, nil
}

// applyWith says how a dry run's plan can be applied on h.
func applyWith(h erdma.Host, failingOnly bool) string {
	cmd := "erdmakit setup"
	if failingOnly {
		cmd = "erdmakit doctor --fix"
	}
	switch {
	case h.Live():
		return "run `" + cmd + "` as root to apply"
	case h.Source() != h.Root():
		return h.Source() + " is an archive: nothing can be applied to it (unpack it and give the directory as --root to write the files there)"
	}
	return "run `" + cmd + " --root " + shq.Quote(h.Root()) + "` to write the files under that root (no live command is run there)"
}

// runner is one Run: the host, the doctor's latest report of it, and the
// result so far. Each stage plans from the report as it is now; a stage
// that changed something has the host read again for the next.
type runner struct {
	opt          *Options
	h            erdma.Host
	quick        doctor.Options
	rep          *erdma.Report
	res          *Result
	cloudPending int // ERIs the cloud stage plans to attach (dry run)
}

// stage plans, applies and judges one selected stage into sr; stop says
// that the run ends here. The error is for what stops the run before any
// judgment (the doctor failing to read the host, a cancelled context).
func (r *runner) stage(ctx context.Context, name string, sr *StageResult) (stop bool, err error) {
	var p *doctor.Plan
	var perr error
	skip := ""
	switch name {
	case doctor.StageCloud:
		p, skip, perr, err = r.cloud(ctx)
	case doctor.StageVerify:
		p, perr, err = r.verify(ctx)
	default:
		p, skip, perr = r.host(ctx, name)
	}
	if err != nil {
		return false, err
	}
	if skip != "" {
		sr.Status, sr.Notes = StatusSkipped, append(sr.Notes, skip)
		return false, nil
	}
	// The host stages are applied here; the cloud and verify stages apply
	// their own (the cloud's calls are its plan's apply).
	host := name != doctor.StageVerify && name != doctor.StageCloud
	if perr == nil && p != nil && !r.opt.DryRun && p.Blocked == "" && host {
		perr = doctor.Apply(ctx, p)
	}
	if errors.Is(perr, context.Canceled) || errors.Is(perr, context.DeadlineExceeded) {
		return false, perr // what the stage says of what it did (the ENIs it created) comes with it
	}
	if p != nil && !r.opt.DryRun && name != doctor.StageVerify && slices.ContainsFunc(p.Changes, func(c doctor.Change) bool { return c.Done }) {
		// Later stages plan from the host as it is now.
		if r.rep, err = doctor.Run(ctx, r.h, r.quick); err != nil {
			return false, err
		}
	}
	if p != nil {
		sr.Found, sr.Notes, sr.Blocked, sr.Next = nonNil(p.Found), nonNil(p.Notes), p.Blocked, p.Next
		sr.Changes = recorded(p.Changes)
	}
	pending := r.opt.DryRun && (name == doctor.StageVerify || name == doctor.StageOS && r.cloudPending > 0)
	switch {
	case errors.Is(perr, doctor.ErrInvalidValue):
		// A value from outside that cannot be configured: nothing is
		// planned around it (exit 3, naming it).
		return false, perr
	case perr != nil:
		sr.Status, sr.Error = StatusFailed, perr.Error()
		stop = !r.opt.DryRun
	case p.Blocked != "":
		sr.Status = StatusBlocked
		// A dry run plans every stage; a run stops here.
		stop = name != doctor.StageVerify && !r.opt.DryRun
	case len(p.Changes) == 0 && !pending:
		sr.Status = StatusUnchanged
	case r.opt.DryRun:
		sr.Status = StatusPlanned
	default:
		sr.Status = StatusChanged
	}
	r.count(name, sr)
	return stop, nil
}

// recorded is a plan's changes as the result records them (what each
// made, without what makes it).
func recorded(cs []doctor.Change) []setupresult.Change {
	out := make([]setupresult.Change, 0, len(cs))
	for _, c := range cs {
		rc := setupresult.Change{Stage: c.Stage, Checks: c.Checks, Kind: c.Kind, Target: c.Target, Command: c.Command,
			Revert: c.Revert, Done: c.Done, Error: c.Error}
		if c.File != nil {
			f := setupresult.FileChange(*c.File)
			rc.File = &f
		}
		out = append(out, rc)
	}
	return out
}

// count adds a stage's changes to the result, and the reverts of those made.
func (r *runner) count(name string, sr *StageResult) {
	for _, c := range sr.Changes {
		if c.Done || r.opt.DryRun {
			r.res.Changed++
		}
		if c.Done && c.Revert != "" {
			rv := Revert{Stage: name, Change: c.Command, Command: c.Revert}
			if c.File != nil {
				rv.Backup = c.File.Backup
			}
			r.res.Reverts = append(r.res.Reverts, rv)
		}
	}
}

// cloud plans (and, unless a dry run, makes) the cloud stage; skip is the
// note when there is none. The cloud's jumbo-frame answer becomes the
// doctor's and the os stage's fact.
func (r *runner) cloud(ctx context.Context) (p *doctor.Plan, skip string, perr, err error) {
	opt := r.opt
	if opt.Cloud == nil || opt.FailingOnly {
		why := opt.CloudSkipped
		if why == "" {
			why = "no cloud stage (no credentials or RAM role, or --no-cloud)"
		}
		return nil, why + ": the ERIs are taken as attached", nil, nil
	}
	p, jumbo, perr := opt.Cloud.Stage(ctx, opt.DryRun)
	if p != nil && opt.DryRun {
		for _, c := range p.Changes {
			if strings.HasPrefix(c.Command, "AttachNetworkInterface") {
				r.cloudPending++
			}
		}
	}
	if cloudSkips(perr) {
		return nil, perr.Error() + ": the cloud stage is skipped, the ERIs are taken as attached", nil, nil
	}
	if ctx.Err() != nil {
		return p, "", perr, nil
	}
	if jumbo != nil && opt.Doctor.JumboFrames == nil {
		// The os stage and the mtu check judge by the cloud's answer.
		opt.Doctor.JumboFrames = jumbo
		r.quick.JumboFrames = jumbo
		if r.rep, err = doctor.Run(ctx, r.h, r.quick); err != nil {
			return nil, "", nil, err
		}
	}
	return p, "", perr, nil
}

// verify is the verify stage: the whole doctor again, then (not for
// doctor --fix) the measurements and the NCCL environment.
func (r *runner) verify(ctx context.Context) (p *doctor.Plan, perr, err error) {
	opt := r.opt
	if !opt.DryRun {
		full := opt.Doctor
		full.Progress = nil
		if r.rep, err = doctor.Run(ctx, r.h, full); err != nil {
			return nil, nil, err
		}
	}
	p = verifyPlan(r.rep, opt.DryRun)
	if opt.FailingOnly {
		// doctor --fix: the doctor again, nothing else (no NCCL
		// environment, no bandwidth).
		if opt.DryRun {
			p.Notes = []string{"after the fixes: erdmakit doctor again"}
		}
		return p, nil, nil
	}
	if p.Blocked == "" {
		perr = verifyMeasure(ctx, r.h, r.rep, opt, p, r.res)
		if perr == nil && !opt.DryRun {
			perr = doctor.Apply(ctx, p)
		}
	}
	return p, perr, nil
}

// host plans one of the doctor's host stages (driver, os, gpu, limits).
func (r *runner) host(ctx context.Context, name string) (p *doctor.Plan, skip string, perr error) {
	if r.opt.FailingOnly && !failing(r.rep, name) {
		return nil, "its checks pass", nil
	}
	if name == doctor.StageOS && r.opt.DryRun && r.cloudPending > 0 {
		// The ERIs do not exist yet: the metadata service has nothing for
		// them. Plan what they will get.
		return pendingOS(r.opt, r.cloudPending), "", nil
	}
	p, perr = doctor.PlanStage(ctx, r.h, r.rep, r.opt.Doctor, name, &r.opt.Fix)
	return p, "", perr
}

// left is every check not ok at the end, with its next step. A check this
// run's changes served is left with what that change needs after it (log
// in again, the next boot), not the check's advice to make the change.
func left(res *Result, rep *erdma.Report) []Left {
	fixed := map[string]string{}
	for _, s := range res.Stages {
		for _, c := range s.Changes {
			if c.Done && s.Name != doctor.StageVerify {
				for _, id := range c.Checks {
					fixed[id] = strings.Join(append([]string{"changed by this run (" + s.Name + " stage)"}, s.Notes...), "; ")
				}
			}
		}
	}
	out := []Left{}
	for _, f := range rep.Findings {
		if f.Severity == health.Warn || f.Severity == health.Fail {
			next := f.Step()
			if n, ok := fixed[f.ID]; ok {
				next = n
			}
			out = append(out, Left{Check: f.ID, Severity: f.Severity, Summary: f.Summary, Next: next})
		}
	}
	return out
}

func verdict(res *Result, rep *erdma.Report) (health.Severity, string) {
	st := rep.Status
	if st == health.Skip || res.DryRun {
		// A dry run proves nothing: it fails only where a stage cannot
		// complete.
		st = health.OK
	}
	if res.Bandwidth != nil && !res.DryRun {
		st = health.Worst(st, res.Bandwidth.Status)
	}
	for _, s := range res.Stages {
		if s.Stopped() {
			st = health.Fail
		}
	}
	switch {
	case res.DryRun:
		return st, VerdictPlanned
	case st == health.OK:
		return st, VerdictProven
	case st == health.Warn:
		return st, VerdictProvenWarnings
	}
	return st, VerdictNotProven
}

// verifyPlan is the verify stage's judgement of the doctor's report.
func verifyPlan(rep *erdma.Report, dryRun bool) *doctor.Plan {
	p := doctor.NewPlan(doctor.StageVerify)
	if dryRun {
		p.Notes = append(p.Notes, "after the other stages: erdmakit doctor (with the verbs probe), then the measurements")
		return p
	}
	counts := map[health.Severity]int{}
	var first *health.Finding
	for i, f := range rep.Findings {
		counts[f.Severity]++
		if f.Severity == health.Fail && first == nil {
			first = &rep.Findings[i]
		}
	}
	p.Found = append(p.Found, fmt.Sprintf("doctor: %s (%d ok, %d warn, %d fail, %d skip)", rep.Status,
		counts[health.OK], counts[health.Warn], counts[health.Fail], counts[health.Skip]))
	if first != nil {
		p.Blocked = "doctor: " + first.ID + ": " + first.Summary
		p.Next = first.Step()
	}
	return p
}

// pendingOS is the os stage's plan before the cloud stage has attached
// the ERIs (a dry run): what each will get, and where it is persisted.
func pendingOS(opt *Options, n int) *doctor.Plan {
	p := doctor.NewPlan(doctor.StageOS)
	p.Found = append(p.Found, fmt.Sprintf("%d ERI(s) not attached yet: the cloud stage attaches them first", n))
	stack, why := opt.Fix.NetworkStack, "asked for"
	if stack == "" {
		var err error
		if stack, why, err = doctor.DetectNetworkStack(opt.Fix.Root); err != nil {
			p.Blocked = err.Error()
			p.Next = "name how this host persists its network: --network-stack networkmanager, netplan, ifcfg or networkd"
			return p
		}
	}
	p.Found = append(p.Found, "network configuration: "+stack+" ("+why+")")
	mtu := "8500 with jumbo frames, else 1400 (the cloud stage reads EnableJumboFrame)"
	if j := opt.Doctor.JumboFrames; j != nil {
		mtu = map[bool]string{true: "8500 (jumbo frames)", false: "1400 (no jumbo frames)"}[*j]
	}
	file := map[string]string{doctor.StackNetplan: "/etc/netplan/60-erdmakit-DEV.yaml", doctor.StackNetworkManager: "/etc/NetworkManager/system-connections/erdmakit-DEV.nmconnection",
		doctor.StackIfcfg: "/etc/sysconfig/network-scripts/ifcfg-DEV and route-DEV", doctor.StackNetworkd: doctor.NetworkdFile("DEV")}[stack]
	p.Notes = append(p.Notes, fmt.Sprintf("after the cloud stage: each new ERI's netdev (DEV) gets its address, prefix and gateway from the metadata service, "+
		"its subnet and default routes at metric 200 or more (above the primary ENI's), MTU %s, persisted in %s; a rerun of erdmakit setup --dry-run then lists each change", mtu, file))
	return p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// failing reports whether one of the checks the stage's fix serves warns or
// fails in rep.
func failing(rep *erdma.Report, stage string) bool {
	for _, sf := range doctor.StageFixes() {
		if sf.Fix.Stage != stage {
			continue
		}
		for _, f := range rep.Findings {
			if slices.Contains(sf.Checks, f.ID) && (f.Severity == health.Warn || f.Severity == health.Fail) {
				return true
			}
		}
	}
	return false
}

// Package doctor is erdmakit's one doctor pipeline: read the host, learn
// the instance type, look at the GPUs through NVML, run every check in the
// order the eRDMA guide goes, and return the report. `erdmakit doctor`,
// `erdmakit fleet doctor` and the exporter all call it, so an importer gets
// the CLI's answer with one call.
//
// Each check has exactly one owner: the host checks are package erdma's,
// gpu-count and gpu-nic-distance package nvml's. Other packages contribute
// checks through Options.Checks (see Check); a package below the doctor
// (eri's cloud checks) writes them against the inventory alone
// (erdma.HostCheck) and HostChecks adapts them, so that it need not import
// the doctor.
//
// The package builds on any OS with CGO_ENABLED=0: a recorded host's verdict
// is the same in every build, cgo or not, Linux or not (the recording's NVML
// replays without cgo). Reading and changing the live host (netlink,
// RLIMIT_MEMLOCK, modules) is Linux's: elsewhere those answer
// erdma.ErrNotLinux.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
)

// DefaultInterval is the time between the two hw_counters readings of the
// rate-limit-drops check on a live host.
const DefaultInterval = 2 * time.Second

// Report is what the doctor returns: the overall status, one finding per
// check in the guide's order, and the host it read. It is defined in package
// erdma (the host's inventory is part of it, and erdma's recorded-host and
// Prometheus code read it); this name is the one to use.
type Report = erdma.Report

// ErrOptions is what every invalid option wraps.
var ErrOptions = errors.New("invalid doctor options")

// Options tune the pipeline. The zero value reads the host, asks no
// metadata service and takes one counter reading; DefaultOptions is what
// `erdmakit doctor` runs with.
type Options struct {
	// InstanceType, when set ("ecs.<family>.<size>"), is checked against
	// instead of the metadata service's or the recording's.
	InstanceType string
	// Metadata is asked for the instance on a live host; nil: not asked.
	Metadata *erdma.MetadataClient
	// Interval between two hw_counters readings on a live host, for
	// rate-limit-drops; 0 means one reading. Ignored on a recorded host.
	Interval time.Duration
	// SkipTools: do not look for eadm and the other tools on PATH.
	SkipTools bool
	// NVML is the GPU library; nil means nvml.ForRoot(host root) (the live
	// NVML on "/", the recorded snapshot otherwise).
	NVML nvml.Library
	// JumboFrames, when set, is the instance's EnableJumboFrame (from the
	// ECS API or the operator), filled into the instance where it does not
	// say: the mtu check and setup's os stage judge by it (erdma.ERIMTU).
	JumboFrames *bool
	// Verbs asks libibverbs on a live host (the verbs check, the DMA-BUF
	// probe); nil: the verbs check says skip. verbsprobe.Live is the real
	// one (package doctor/verbsprobe); `erdmakit doctor` runs with it.
	Verbs Verbs
	// Checks are contributed by other packages; see Check.
	Checks []Check
	// Progress, when set, is told what the doctor is about to wait for
	// (the counter interval), so a terminal can say so.
	Progress func(msg string)
}

// DefaultOptions are `erdmakit doctor`'s defaults: the metadata service at
// its default address, counters read DefaultInterval apart.
func DefaultOptions() Options {
	return Options{Metadata: &erdma.MetadataClient{}, Interval: DefaultInterval}
}

// Input is what a check reads. The pipeline fills it once per run.
type Input struct {
	Host      erdma.Host
	Inventory *erdma.Inventory // Instance, Profile and GPU filled in
	// GPUs is NVML's view while the checks run; never nil there
	// (Available false says why not). A fix's Input (PlanFixes,
	// PlanStage) has none: fixes read Inventory.GPU, what the doctor's
	// report carries, and never probe the GPUs again.
	GPUs *nvml.Report
	// InstanceError says why Inventory.Instance is unknown.
	InstanceError error
	// Findings are the findings of the checks run before this one.
	Findings []health.Finding
	counters erdma.DoctorOptions
	verbs    Verbs
	// jumbo is Options.JumboFrames (--jumbo-frames), which the os stage
	// follows even when the instance is unknown.
	jumbo *bool
}

// Check is a check another package contributes: a stable kebab-case ID,
// the guide step it enforces, and Run, which decides it. Run may close over
// whatever it needs that the pipeline does not read (a verbs probe, a cloud
// API client). The finding's ID is set to Check.ID.
//
// Placement: a Check whose ID is a built-in check's replaces that check in
// place (one owner at a time); otherwise it goes right after the check
// named by After, or at the end when After is "".
type Check struct {
	ID    string
	Step  string
	Title string
	After string
	Run   func(ctx context.Context, in *Input) health.Finding
	// Fix, when set, changes the host so that the check passes; its plan
	// is the check's remediation (see Fix).
	Fix *Fix
}

// builtins are the checks the pipeline always runs, in the guide's order.
func builtins() []Check {
	var cs []Check
	for _, c := range HostChecks(erdma.HostChecks()...) {
		cs = append(cs, c)
		if c.ID == erdma.FindingUVerbs {
			cs = append(cs, verbsCheck())
		}
		if c.ID == erdma.FindingGDRPeermem {
			cs = append(cs,
				Check{ID: nvml.FindingGPUCount, Step: "guide step 1", Title: "as many GPUs as the instance type has",
					Run: func(_ context.Context, in *Input) health.Finding {
						return gpuCountFinding(in.GPUs, in.Inventory.Profile)
					}},
				Check{ID: nvml.FindingGPUDistance, Step: "domain section 5", Title: "each GPU's nearest eRDMA device and the PCIe distance",
					Run: func(_ context.Context, in *Input) health.Finding { return gpuDistanceFinding(in.GPUs) }})
		}
	}
	return cs
}

// HostChecks makes doctor checks of checks decided from the inventory
// alone (erdma.HostCheck): the built-in host checks, and those a package
// below the doctor contributes without importing it, such as the cloud's:
//
//	opt.Checks = append(opt.Checks, doctor.HostChecks(eri.DoctorChecks(ctx, h, eri.CloudOptions{})...)...)
//
// Each Run gets the inventory and erdma.DoctorOptions with the pipeline's
// InstanceError (and, on a live host, its counter source and interval).
// A host check that names a stage (erdma.HostCheck.FixedBy) gets that
// stage's fix; the checks of one call that name the same stage share it,
// so that setup and doctor --fix run it once.
func HostChecks(hcs ...erdma.HostCheck) []Check {
	out := make([]Check, 0, len(hcs))
	fixes := hostFixes()
	for _, hc := range hcs {
		run := hc.Run
		c := Check{ID: hc.ID, Step: hc.Step, Title: hc.Title, After: hc.After}
		if i := slices.IndexFunc(fixes, func(f *Fix) bool { return f.Stage == hc.FixedBy }); i >= 0 {
			c.Fix = fixes[i]
		}
		if run != nil {
			c.Run = func(ctx context.Context, in *Input) health.Finding { return run(ctx, in.Inventory, in.counters) }
		}
		out = append(out, c)
	}
	return out
}

// plan merges the contributed checks into the built-in list.
func plan(extra []Check) ([]Check, error) {
	cs := builtins()
	seen := map[string]bool{}
	for _, c := range extra {
		switch {
		case c.ID == "" || c.Run == nil:
			return nil, fmt.Errorf("%w: check %q needs an ID and a Run", ErrOptions, c.ID)
		case seen[c.ID]:
			return nil, fmt.Errorf("%w: check %q given twice", ErrOptions, c.ID)
		}
		seen[c.ID] = true
		if i := slices.IndexFunc(cs, func(b Check) bool { return b.ID == c.ID }); i >= 0 {
			cs[i] = c
			continue
		}
		if c.After == "" {
			cs = append(cs, c)
			continue
		}
		i := slices.IndexFunc(cs, func(b Check) bool { return b.ID == c.After })
		if i < 0 {
			return nil, fmt.Errorf("%w: check %q: After %q is no check", ErrOptions, c.ID, c.After)
		}
		cs = slices.Insert(cs, i+1, c)
	}
	return cs, nil
}

// Checks lists the checks a run with these contributed checks makes, in
// order.
func Checks(extra ...Check) ([]erdma.Check, error) {
	cs, err := plan(extra)
	if err != nil {
		return nil, err
	}
	out := make([]erdma.Check, len(cs))
	for i, c := range cs {
		out[i] = erdma.Check{ID: c.ID, Step: c.Step, Title: c.Title}
	}
	return out, nil
}

// Run reads the host and diagnoses it: the whole doctor. The error is for
// what stops it (invalid options, an unreadable host, a cancelled context);
// everything else is a finding.
func Run(ctx context.Context, h erdma.Host, opt Options) (*Report, error) {
	if _, err := validate(opt); err != nil {
		return nil, err
	}
	inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: opt.SkipTools})
	if err != nil {
		return nil, err
	}
	return Diagnose(ctx, h, inv, opt)
}

// Diagnose runs the pipeline on an inventory already read (the exporter
// reads one per scrape): instance, GPUs, checks. It fills inv's Instance,
// Profile and GPU.
func Diagnose(ctx context.Context, h erdma.Host, inv *erdma.Inventory, opt Options) (*Report, error) {
	cs, err := validate(opt)
	if err != nil {
		return nil, err
	}
	rep, _, err := diagnose(ctx, h, inv, opt, cs)
	return rep, err
}

// diagnose is Diagnose's pipeline running the checks cs (the plan, or a
// part of it); it also returns NVML's view.
func diagnose(ctx context.Context, h erdma.Host, inv *erdma.Inventory, opt Options, cs []Check) (*Report, *nvml.Report, error) {
	if inv == nil {
		return nil, nil, fmt.Errorf("%w: no inventory", ErrOptions)
	}
	inst, instErr := Instance(ctx, h, opt)
	if opt.JumboFrames != nil && (inst == nil || inst.JumboFrames == nil) {
		// --jumbo-frames is a fact about the instance even when its type
		// is unknown: the mtu check and the os stage judge by it.
		v := *opt.JumboFrames
		if inst == nil {
			inst = &erdma.Instance{Source: "flag"}
		}
		inst.JumboFrames = &v
	}
	erdma.SetInstance(inv, inst)
	in := &Input{Host: h, Inventory: inv, InstanceError: instErr, GPUs: GPUs(ctx, h, inv, opt), verbs: opt.Verbs, jumbo: opt.JumboFrames}
	in.counters.InstanceError = instErr
	if h.Live() && opt.Interval > 0 {
		in.counters.Interval = opt.Interval
		in.counters.Counters = erdma.CounterSourceFunc(func(ctx context.Context, dev string, port int) (map[string]uint64, error) {
			return erdma.ReadCounters(ctx, h, dev, port)
		})
		if opt.Progress != nil && slices.ContainsFunc(inv.Devices, func(d erdma.Device) bool { return d.ERDMA }) {
			opt.Progress(fmt.Sprintf("reading hw_counters twice, %s apart...", opt.Interval))
		}
	}
	rep := &erdma.Report{Status: health.OK, Host: inv, Findings: make([]health.Finding, 0, len(cs))}
	for _, c := range cs {
		in.Findings = rep.Findings
		f := run(ctx, c, in)
		rep.Findings = append(rep.Findings, f)
		rep.Status = health.Worst(rep.Status, f.Severity)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return rep, in.GPUs, nil
}

func validate(opt Options) ([]Check, error) {
	if opt.Interval < 0 {
		return nil, fmt.Errorf("%w: interval %s is negative", ErrOptions, opt.Interval)
	}
	if opt.InstanceType != "" {
		if _, err := erdma.ParseInstanceType(opt.InstanceType); err != nil {
			return nil, fmt.Errorf("%w: instance type: %w", ErrOptions, err)
		}
	}
	return plan(opt.Checks)
}

// Instance decides the instance the host is checked against: the
// InstanceType option, else what a recorded host carries, else the
// metadata service (when Options.Metadata is set). The error says why it
// is unknown; the pipeline makes it evidence, not a reason to stop.
func Instance(ctx context.Context, h erdma.Host, opt Options) (*erdma.Instance, error) {
	if opt.InstanceType != "" {
		t, err := erdma.ParseInstanceType(opt.InstanceType)
		if err != nil {
			return nil, err
		}
		return &erdma.Instance{Type: t.String(), Source: "flag"}, nil
	}
	if !h.Live() {
		inst, err := h.RecordedInstance(ctx)
		if err != nil {
			return nil, fmt.Errorf("recorded instance: %w", err)
		}
		if inst == nil {
			return nil, errors.New("the recorded host has no " + erdma.RecordedInstanceFile)
		}
		inst.Source = "recorded"
		return inst, nil
	}
	if opt.Metadata == nil {
		return nil, errors.New("the metadata service was not asked")
	}
	return opt.Metadata.Instance(ctx)
}

// GPUs reads the host's GPUs through opt.NVML (nil: nvml.ForRoot(host
// root)) and fills inv.GPU, the GPU facts the checks and nccl.AdviseEnv
// use. On a live host opt.Verbs, when set, probes each RDMA device for
// DMA-BUF (Verbs.ProbeDMABUF). What cannot be read is the report's reason,
// never an error.
func GPUs(ctx context.Context, h erdma.Host, inv *erdma.Inventory, opt Options) *nvml.Report {
	lib := opt.NVML
	if lib == nil {
		var err error
		if lib, err = nvml.ForRoot(ctx, h.Root()); err != nil {
			return nvml.Unavailable(h.Root(), err)
		}
	}
	nics, _ := NICsOf(inv.Devices)
	// On a live host the RDMA providers are asked about DMA-BUF as NCCL
	// asks them; a recording replays what was recorded.
	rep, err := nvml.Inspect(ctx, lib, h.Root(), nics, liveDMABUFProbe(ctx, h, inv.Devices, opt.Verbs)...)
	if err != nil {
		return nvml.Unavailable(h.Root(), err)
	}
	info := gpuInfo(rep)
	inv.GPU = &info
	return rep
}

// run runs one check; a panic in a check (a bug) becomes a warning finding
// rather than ending the doctor.
func run(ctx context.Context, c Check, in *Input) (f health.Finding) {
	defer func() {
		if r := recover(); r != nil {
			f = health.Finding{ID: c.ID, Severity: health.Warn,
				Summary:  fmt.Sprintf("internal error in check %s: %v", c.ID, r),
				Evidence: []string{strings.TrimSpace(string(debug.Stack()))}}
		}
	}()
	f = c.Run(ctx, in)
	f.ID = c.ID
	f.Fix = fixStep(ctx, c, in, f)
	if f.Evidence == nil {
		f.Evidence = []string{}
	}
	return f
}

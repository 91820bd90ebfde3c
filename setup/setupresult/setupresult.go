// Package setupresult is what a setup run returns, as plain data: the
// stages, the changes made (or planned), how to undo them, the checks left
// and the doctor's final report. It is the documented JSON of `erdmakit
// setup --json` and `erdmakit doctor --fix --json` (docs/setup.md).
//
// setup.Result is this package's Result (setup's names are aliases of
// these), and report reads the same type from a Go value or from the JSON:
// report shows a setup run without importing setup, which changes hosts
// and links the doctor, go-nvml and the ECS SDK. This package imports the
// result types it holds (erdma's doctor report, perf's bandwidth) and the
// standard library only.
package setupresult

import (
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/perf"
)

// Stage statuses.
const (
	StatusUnchanged  = "unchanged"   // nothing to change
	StatusPlanned    = "planned"     // dry run: Changes would be made
	StatusChanged    = "changed"     // Changes were made
	StatusBlocked    = "blocked"     // cannot complete: Blocked says why, Next what to do
	StatusFailed     = "failed"      // a change failed: Error names it
	StatusSkipped    = "skipped"     // --only/--skip, or not applicable (Notes say why)
	StatusNotReached = "not reached" // an earlier stage stopped the run
)

// Verdicts of a run.
const (
	VerdictProven         = "proven"
	VerdictProvenWarnings = "proven with warnings"
	VerdictNotProven      = "not proven"
	VerdictPlanned        = "planned" // dry run
)

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

// Change is one change of a stage as the run recorded it: planned (a dry
// run), made (Done) or failed (Error). doctor.Change is the same change
// while planned, with what makes it.
type Change struct {
	Stage string `json:"stage"`
	// Checks are the doctor checks this change serves.
	Checks []string `json:"checks"`
	// Kind is doctor's KindFile, KindNetlink, KindCommand, KindProcess
	// or setup's KindAPI.
	Kind string `json:"kind"`
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
}

// Stage is one stage's outcome.
type Stage struct {
	Name string `json:"name"`
	// Status is one of the Status constants.
	Status  string   `json:"status"`
	Found   []string `json:"found"`
	Changes []Change `json:"changes"`
	Notes   []string `json:"notes"`
	Blocked string   `json:"blocked,omitempty"`
	Next    string   `json:"next,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Stopped reports whether the stage did not complete: blocked or failed.
func (s Stage) Stopped() bool { return s.Status == StatusBlocked || s.Status == StatusFailed }

// Revert is how to undo one applied change.
type Revert struct {
	Stage   string `json:"stage"`
	Change  string `json:"change"`
	Backup  string `json:"backup,omitempty"`
	Command string `json:"command"`
}

// Left is a check still not ok after the run, and its next step.
type Left struct {
	Check    string          `json:"check"`
	Severity health.Severity `json:"severity"`
	Summary  string          `json:"summary"`
	Next     string          `json:"next,omitempty"`
}

// Result is a whole run.
type Result struct {
	DryRun bool `json:"dry_run"`
	// Verdict is one of the Verdict constants.
	Verdict string          `json:"verdict"`
	Status  health.Severity `json:"status"`
	// Changed counts the changes made (planned, in a dry run).
	Changed int     `json:"changed"`
	Stages  []Stage `json:"stages"`
	// Reverts lists how to undo each change made, in the order to run them.
	Reverts []Revert `json:"reverts"`
	// Left is every check not ok at the end, with its next step.
	Left []Left `json:"left"`
	// Doctor is the final doctor report (after the run; before it in a dry run).
	Doctor *erdma.Report `json:"doctor,omitempty"`
	// Bandwidth is the verify stage's bw report (absent when not measured).
	Bandwidth *perf.Report `json:"bandwidth,omitempty"`
	// ApplyWith, in a dry run, says how to make the plan's changes on this
	// root: as root on the live host; files only on a directory root;
	// nothing on an archive (it cannot be changed).
	ApplyWith string `json:"apply_with,omitempty"`
}

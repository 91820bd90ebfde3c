// Package health holds the one verdict type every erdmakit check shares: a
// Severity, a Finding (one check's result with its evidence and fix) and
// Worst, the rule that turns findings into a status (report.WriteFindingsTable
// prints them). It imports only the standard library, so parsers and other
// portable packages can report findings without pulling in the host readers.
package health

import "fmt"

// Severity of a finding. Skip means "could not be checked or does not
// apply"; it never makes a status worse.
type Severity string

const (
	OK   Severity = "ok"
	Skip Severity = "skip"
	Warn Severity = "warn"
	Fail Severity = "fail"
)

// Rank orders severities by badness: ok and skip 0, warn 1, fail 2; an
// unknown severity ranks as fail, so a typo is never mistaken for health.
func (s Severity) Rank() int {
	switch s {
	case OK, Skip, "":
		return 0
	case Warn:
		return 1
	}
	return 2
}

// Valid reports whether s is one of the four severities.
func (s Severity) Valid() bool {
	return s == OK || s == Skip || s == Warn || s == Fail
}

// Exit is the process exit code of a status: 0 ok (and skip), 1 warn,
// 2 fail (the Nagios convention; ExitCode adds 3, "could not run").
func (s Severity) Exit() int { return s.Rank() }

// The process exit codes of the Nagios convention, which erdmakit's CLI
// keeps stable and a health checker reads directly (README "Exit codes").
const (
	ExitOK      = 0 // everything checked is fine (skips included)
	ExitWarn    = 1 // something is degraded: a warn finding, bandwidth below the expectation
	ExitFail    = 2 // something is broken: a failing finding, a failed test
	ExitUnknown = 3 // the check could not run (bad input, no such device), or it was interrupted
)

// ExitCode is the exit code of a check that ended with status and err:
// ExitUnknown when err is not nil (the check could not run or did not
// complete, whatever it had found), else status's (Severity.Exit). It is the
// rule every erdmakit command exits by.
func ExitCode(status Severity, err error) int {
	if err != nil {
		return ExitUnknown
	}
	return status.Exit()
}

// ParseSeverity reads a severity as JSON and tables spell it.
func ParseSeverity(s string) (Severity, error) {
	if v := Severity(s); v.Valid() {
		return v, nil
	}
	return "", fmt.Errorf("severity %q: want ok, skip, warn or fail", s)
}

// Finding is the result of one check.
type Finding struct {
	ID          string   `json:"id"` // stable kebab-case: "port-active"
	Severity    Severity `json:"severity"`
	Summary     string   `json:"summary"`
	Evidence    []string `json:"evidence"`              // what was read, with paths
	Remediation string   `json:"remediation,omitempty"` // the step that fixes it, in the check's own words
	// Fix is erdmakit's own fix where the check has one: the command that
	// makes the change (erdmakit doctor --fix) and what it would run. It is
	// set beside Remediation, never instead of it: each has one owner.
	Fix string `json:"fix,omitempty"`
}

// Step is the one step to print for f: erdmakit's fix where there is one,
// else the check's remediation.
func (f Finding) Step() string {
	if f.Fix != "" {
		return f.Fix
	}
	return f.Remediation
}

// Worst returns the worse of a status and a severity, as a status: ok, warn
// or fail (skip and "" count as ok).
func Worst(status, s Severity) Severity {
	if s.Rank() > status.Rank() {
		status = s
	}
	switch status.Rank() {
	case 0:
		return OK
	case 1:
		return Warn
	}
	return Fail
}

// Status is the worst severity among findings, as a status (ok when there
// are none).
func Status(fs []Finding) Severity {
	st := OK
	for _, f := range fs {
		st = Worst(st, f.Severity)
	}
	return st
}

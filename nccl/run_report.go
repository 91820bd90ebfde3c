package nccl

import (
	"fmt"

	"github.com/erdmakit/erdmakit/health"
)

// RunReport is the public schema of `erdmakit nccl run --json`: the
// parsers' TestResult (its fields at the top level) plus how the run went
// and the diagnosis.
type RunReport struct {
	*TestResult
	Argv []string `json:"argv"`
	// Env is every variable given to the ranks with its value (the advice
	// of --host-env among them): what the diagnosis took as passed.
	Env []Var `json:"env"`
	// EnvWarnings are NCCL variables the launcher's caller had set to
	// another value (RunResult.Warnings): the ranks got Env's.
	EnvWarnings []string `json:"env_warnings,omitempty"`
	// LauncherExitCode is mpirun's or srun's exit status (-1: killed or
	// not started).
	LauncherExitCode int             `json:"launcher_exit_code"`
	DurationS        float64         `json:"duration_s"`
	Cancelled        bool            `json:"cancelled,omitempty"`
	LaunchFailures   []LaunchFailure `json:"launch_failures"`
	// ExpectBusBWGBs is the expectation the busbw finding used (0: none).
	ExpectBusBWGBs float64          `json:"expect_busbw_gbs,omitempty"`
	Findings       []health.Finding `json:"findings"`
	// Status is the worst finding: ok, warn (e.g. below expectation) or fail.
	Status health.Severity `json:"status"`
}

// NewRunReport diagnoses run and returns the report.
func NewRunReport(run *RunResult, exp Expectation) *RunReport {
	rep := &RunReport{LauncherExitCode: -1, LaunchFailures: []LaunchFailure{}, Env: []Var{}}
	if run != nil {
		rep.TestResult = run.Result
		rep.Argv = run.Argv
		if run.Env != nil {
			rep.Env = run.Env
		}
		rep.EnvWarnings = run.Warnings
		rep.LauncherExitCode = run.ExitCode
		rep.DurationS = run.Duration.Seconds()
		rep.Cancelled = run.Cancelled
		if run.Failures != nil {
			rep.LaunchFailures = run.Failures
		}
	}
	if rep.TestResult == nil {
		rep.TestResult = &TestResult{Rows: []Row{}, Failures: []string{}}
	}
	if r := LargestRow(rep.TestResult); r != nil {
		if v, _, ok := exp.expected(r.Size, rep.Hosts); ok {
			rep.ExpectBusBWGBs = v
		}
	}
	rep.Findings = DiagnoseRun(run, exp)
	if rep.Findings == nil {
		rep.Findings = []health.Finding{}
	}
	if run != nil && run.ExitCode != 0 && len(run.Failures) == 0 && !run.Cancelled {
		rep.Findings = append(rep.Findings, health.Finding{ID: "launch-exit-status", Severity: health.Fail,
			Summary:     fmt.Sprintf("the launcher exited with status %d", run.ExitCode),
			Evidence:    []string{ShellJoin(run.Argv)},
			Remediation: "read the launcher's output (--log FILE keeps it; -v shows it live)"})
	}
	rep.Status = Worst(rep.Findings)
	return rep
}

package nccl

import "github.com/erdmakit/erdmakit/nccl/ncclog"

// The parsed logs' types live in package ncclog (standard library only, so
// a laptop can parse a cluster's logs); these aliases are the names nccl's
// own API (RunResult, Diagnose, RunOptions.OnRow) has always used.
type (
	// TestResult is an nccl-tests result (ncclog.ParseTests).
	TestResult = ncclog.TestResult
	// Row is one message size of the results table.
	Row = ncclog.Row
	// Measurement is a row's out-of-place or in-place group.
	Measurement = ncclog.Measurement
	// Count is a Measurement's #wrong: a number or unknown (N/A).
	Count = ncclog.Count
	// LogSummary is what an NCCL_DEBUG=INFO log says (ncclog.Analyze).
	LogSummary = ncclog.Summary
	// LaunchFailure is a launcher's failure found in the output (mpirun, srun).
	LaunchFailure = ncclog.LaunchFailure
)

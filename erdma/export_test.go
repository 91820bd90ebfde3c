package erdma

import (
	"context"

	"github.com/erdmakit/erdmakit/health"
)

// Diagnose runs this package's host checks alone, in order: the tests of
// the checks use it. The doctor package runs the whole pipeline.
func Diagnose(ctx context.Context, inv *Inventory, opt DoctorOptions) *Report {
	if inv == nil {
		inv = &Inventory{}
	}
	rep := &Report{Status: health.OK, Host: inv}
	for _, c := range HostChecks() {
		f := c.Run(ctx, inv, opt)
		rep.Findings = append(rep.Findings, f)
		rep.Status = health.Worst(rep.Status, f.Severity)
	}
	return rep
}

// Checks lists the host checks' descriptions.
func Checks() []Check {
	var out []Check
	for _, c := range HostChecks() {
		out = append(out, c.Check)
	}
	return out
}

package doctor

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
)

// TableOptions tune WriteTable.
type TableOptions struct {
	Color   bool // ANSI colours on the severity words
	Verbose bool // evidence and fix of every finding, not only problems
	// Hint, when set, may add a line to a finding's fix (the CLI names its
	// flags there; library findings never do).
	Hint func(f health.Finding) string
}

// WriteTable prints a report the way `erdmakit doctor` does: the findings
// as a table, then the evidence and the fix of every warning and failure
// (of every finding with Verbose), the status and the first step to take.
func WriteTable(w io.Writer, rep *erdma.Report, opt TableOptions) error {
	var b strings.Builder
	root, typ := "/", "unknown"
	if rep.Host != nil {
		root = rep.Host.Root
		if rep.Host.Instance != nil && rep.Host.Instance.Type != "" {
			typ = rep.Host.Instance.Type + " (" + rep.Host.Instance.Source + ")"
		}
	}
	fmt.Fprintf(&b, "erdmakit doctor: host %s, instance type %s\n\n", root, typ)
	if err := render.Findings(&b, rep.Findings, render.FindingsOptions{Color: opt.Color, Verbose: opt.Verbose, Hint: opt.Hint}); err != nil {
		return err
	}
	counts := map[health.Severity]int{}
	var next string
	for _, f := range rep.Findings {
		counts[f.Severity]++
		if next == "" && f.Severity == health.Fail && f.Remediation != "" {
			next = f.ID + ": " + f.Remediation
		}
	}
	sev := func(s health.Severity) string {
		if opt.Color {
			return render.Severity(string(s))
		}
		return string(s)
	}
	fmt.Fprintf(&b, "\nstatus: %s (%d ok, %d warn, %d fail, %d skip)\n", sev(rep.Status),
		counts[health.OK], counts[health.Warn], counts[health.Fail], counts[health.Skip])
	if next != "" {
		fmt.Fprintf(&b, "first step: %s\n", next)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package doctor

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
)

// TableOptions tune WriteTable: health's, whose WriteTable prints the
// findings part.
type TableOptions = health.TableOptions

// WriteTable prints a report the way `erdmakit doctor` does: the findings
// as a table, then the evidence and the fix of every warning and failure
// (of every finding with Verbose), the status and the first step to take.
func WriteTable(w io.Writer, rep *Report, opt TableOptions) error {
	var b strings.Builder
	root, typ := "/", "unknown"
	if rep.Host != nil {
		root = rep.Host.Root
		if rep.Host.Instance != nil && rep.Host.Instance.Type != "" {
			typ = rep.Host.Instance.Type + " (" + rep.Host.Instance.Source + ")"
		}
	}
	fmt.Fprintf(&b, "erdmakit doctor: host %s, instance type %s\n\n", root, typ)
	if err := health.WriteTable(&b, rep.Findings, opt); err != nil {
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

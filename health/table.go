package health

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/internal/render/table"
)

// TableOptions tune WriteTable.
type TableOptions struct {
	Color   bool // ANSI colours on the severity words
	Verbose bool // evidence and fix of every finding, not only problems
	// Hint, when set, may add a line to a finding's fix (the CLI names its
	// flags there; library findings never do).
	Hint func(f Finding) string
}

// WriteTable prints findings the one way every erdmakit command shows them
// (doctor, nccl run): a RESULT/CHECK/SUMMARY table, then the evidence and
// the fix of every warning and failure (of every finding with Verbose).
func WriteTable(w io.Writer, fs []Finding, o TableOptions) error {
	var b strings.Builder
	t := table.New("RESULT", "CHECK", "SUMMARY")
	t.Color, t.SeverityColumn = o.Color, 0
	for _, f := range fs {
		t.Add(string(f.Severity), f.ID, f.Summary)
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	for _, f := range fs {
		if f.Severity != Warn && f.Severity != Fail && !o.Verbose {
			continue
		}
		sev := string(f.Severity)
		if o.Color {
			sev = table.Severity(sev)
		}
		fmt.Fprintf(&b, "\n%s %s: %s\n", sev, f.ID, f.Summary)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "    read: %s\n", e)
		}
		if f.Remediation != "" {
			fmt.Fprintf(&b, "    fix:  %s\n", f.Remediation)
		}
		if o.Hint != nil {
			if h := o.Hint(f); h != "" {
				fmt.Fprintf(&b, "    hint: %s\n", h)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

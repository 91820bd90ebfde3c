package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/setup/setupresult"
)

// WriteSetupTable prints a setup run (or a dry run's plan) the way
// `erdmakit setup` and `erdmakit doctor --fix` do: stage by stage what was
// found, each change (+ planned, * made, ! failed; a dry run shows each
// file's content), notes, why a stage is blocked or failed and the next
// step; then how to revert, the checks left and the verdict. It has no
// severity words: Color changes nothing.
func WriteSetupTable(w io.Writer, res *SetupResult, o TableOptions) error {
	var b strings.Builder
	if res.DryRun {
		b.WriteString("erdmakit setup: plan (dry run: nothing is changed)\n")
	} else {
		b.WriteString("erdmakit setup\n")
	}
	for _, s := range res.Stages {
		writeSetupStage(&b, s, res.DryRun)
	}
	if len(res.Reverts) > 0 {
		b.WriteString("\nto revert (in this order):\n")
		for _, r := range res.Reverts {
			fmt.Fprintf(&b, "  %s\n", r.Command)
		}
	}
	if len(res.Left) > 0 && !res.DryRun {
		b.WriteString("\nleft:\n")
		for _, l := range res.Left {
			fmt.Fprintf(&b, "  %s %s: %s\n", l.Severity, l.Check, l.Summary)
			if l.Next != "" {
				fmt.Fprintf(&b, "    next: %s\n", l.Next)
			}
		}
	}
	switch {
	case res.DryRun && res.Changed == 0:
		fmt.Fprintf(&b, "\nverdict: planned: nothing to change\n")
	case res.DryRun:
		fmt.Fprintf(&b, "\nverdict: planned: %d change(s); %s\n", res.Changed, res.ApplyWith)
	case res.Changed == 0:
		fmt.Fprintf(&b, "\nverdict: %s (nothing changed)\n", res.Verdict)
	default:
		fmt.Fprintf(&b, "\nverdict: %s (%d change(s) made)\n", res.Verdict, res.Changed)
	}
	return write(w, &b)
}

// writeSetupStage is one stage of WriteSetupTable.
func writeSetupStage(b *strings.Builder, s setupresult.Stage, dryRun bool) {
	fmt.Fprintf(b, "\n%-7s %s\n", s.Name, s.Status)
	for _, l := range s.Found {
		fmt.Fprintf(b, "  found: %s\n", l)
	}
	for _, c := range s.Changes {
		mark := "+"
		switch {
		case c.Error != "":
			mark = "!"
		case c.Done:
			mark = "*"
		}
		fmt.Fprintf(b, "  %s %s\n", mark, c.Command)
		if c.Error != "" {
			fmt.Fprintf(b, "    error: %s\n", c.Error)
		}
		if dryRun && c.File != nil {
			for _, l := range strings.Split(strings.TrimRight(c.File.Content, "\n"), "\n") {
				fmt.Fprintf(b, "    | %s\n", l)
			}
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	if s.Blocked != "" {
		fmt.Fprintf(b, "  blocked: %s\n", s.Blocked)
	}
	if s.Error != "" {
		fmt.Fprintf(b, "  failed: %s\n", s.Error)
	}
	if s.Next != "" {
		fmt.Fprintf(b, "  next: %s\n", s.Next)
	}
}

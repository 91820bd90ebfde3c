package report

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/setup/setupresult"
)

// SetupResult is a setup run: the documented JSON of `erdmakit setup
// --json` and `erdmakit doctor --fix --json` (docs/setup.md), which
// Input.Value returns for KindSetup. It is setup.Result itself, whose plain
// types live in package setupresult so that report does not depend on the
// packages that change a host (setup, doctor and the ECS SDK they link):
// report builds on any OS and its hello program stays a third of setup's.
type SetupResult = setupresult.Result

// setupSection shows a setup run: its stages and changes, how to undo
// them, and the doctor's findings at the end (or the checks left).
func setupSection(s *section, name string, r *SetupResult) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"verdict", r.Verdict}, [2]string{"dry run", yesNo(r.DryRun)},
		[2]string{"changes", fmt.Sprint(r.Changed)})
	if r.ApplyWith != "" {
		s.Facts = append(s.Facts, [2]string{"to apply", r.ApplyWith})
	}
	st := table{Caption: "stages", Head: []string{"stage", "status", "found", "changes", "blocked, next, error"}}
	ch := table{Caption: "changes", Head: []string{"stage", "kind", "target", "command", "done", "error"}}
	var fs []finding
	for _, x := range r.Stages {
		sev := health.Severity("")
		switch x.Status {
		case setupresult.StatusFailed:
			sev = health.Fail
			fs = append(fs, finding{ID: "setup-" + x.Name + "-failed", Severity: health.Fail, Summary: x.Error, Remediation: x.Next})
		case setupresult.StatusBlocked:
			sev = health.Warn
			fs = append(fs, finding{ID: "setup-" + x.Name + "-blocked", Severity: health.Warn, Summary: x.Blocked, Remediation: x.Next})
		}
		var why []string
		for _, w := range []string{x.Blocked, x.Next, x.Error} {
			if w != "" {
				why = append(why, w)
			}
		}
		st.Rows = append(st.Rows, row{Status: sev, Cells: []string{x.Name, x.Status, strings.Join(x.Found, "; "), fmt.Sprint(len(x.Changes)), strings.Join(why, "; ")}})
		for _, c := range x.Changes {
			cs := health.Severity("")
			if c.Error != "" {
				cs = health.Fail
			}
			ch.Rows = append(ch.Rows, row{Status: cs, Cells: []string{c.Stage, c.Kind, c.Target, c.Command, yesNo(c.Done), c.Error}})
		}
	}
	s.Tables = append(s.Tables, st)
	if len(ch.Rows) > 0 {
		s.Tables = append(s.Tables, ch)
	}
	if len(r.Reverts) > 0 {
		rt := table{Caption: "how to undo the changes made, in order", Head: []string{"stage", "change", "backup", "command"}}
		for _, x := range r.Reverts {
			rt.Rows = append(rt.Rows, row{Cells: []string{x.Stage, x.Change, x.Backup, x.Command}})
		}
		s.Tables = append(s.Tables, rt)
	}
	var hs []hostRow
	if r.Doctor != nil {
		ds := &section{}
		dfs, dhs := doctorSection(ds, name, r.Doctor)
		s.Facts = append(s.Facts, ds.Facts...)
		fs = append(fs, dfs...)
		hs = dhs
	} else {
		for _, l := range r.Left {
			fs = append(fs, finding{ID: l.Check, Severity: l.Severity, Summary: l.Summary, Remediation: l.Next})
		}
	}
	if r.Bandwidth != nil {
		bs := &section{}
		bfs, _ := bwSection(bs, r.Bandwidth)
		fs = append(fs, bfs...)
		for _, t := range bs.Tables {
			t.Caption = "verify: " + t.Caption
			s.Tables = append(s.Tables, t)
		}
		s.Charts = append(s.Charts, bs.Charts...)
	}
	return fs, hs
}

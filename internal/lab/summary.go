package lab

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/render"
)

// WriteSummary prints one row per top-level test (subtests fold into their
// parent) and per benchmark, the output of every failed test (of every test
// with verbose), the timings, and a final PASS/FAIL line.
func WriteSummary(w io.Writer, s *Summary, strict, verbose bool) {
	t := render.NewTable("PACKAGE", "ROLE", "TEST", "RESULT", "TIME")
	t.SeverityColumn = 3
	t.Color = render.ColorWanted(w)
	var details []string
	pass, fail, skip := 0, 0, 0
	for _, r := range s.Runs {
		if r.Output == nil || (len(r.Output.Tests) == 0 && len(r.Output.Benchmarks) == 0) {
			res := "FAIL"
			if !r.Failed(strict) {
				res = "PASS"
			}
			note := r.Err
			if note == "" {
				note = "no tests ran"
			}
			t.Add(r.Suite, r.Role, "("+note+")", res, r.Elapsed.Round(time.Millisecond).String())
			if res == "FAIL" {
				fail++
				details = append(details, fmt.Sprintf("--- %s [%s]: %s; log %s", r.Suite, r.Role, note, r.Log))
			}
			continue
		}
		for _, tr := range r.Output.Tests {
			if strings.Contains(tr.Name, "/") && tr.Outcome != Fail && tr.Outcome != Unfinished {
				continue
			}
			res := string(tr.Outcome)
			switch tr.Outcome {
			case Pass:
				pass++
			case Skip:
				skip++
			default:
				fail++
			}
			t.Add(r.Suite, r.Role, tr.Name, res, tr.Elapsed.Round(time.Millisecond).String())
			if tr.Outcome == Fail || tr.Outcome == Unfinished || verbose || (strict && tr.Outcome == Skip) {
				if len(tr.Output) > 0 {
					details = append(details, fmt.Sprintf("--- %s [%s] %s %s:\n%s", r.Suite, r.Role, tr.Name, tr.Outcome, strings.Join(tr.Output, "\n")))
				}
			}
		}
		for _, b := range r.Output.Benchmarks {
			var m []string
			for k, v := range b.Metrics {
				m = append(m, fmt.Sprintf("%g %s", v, k))
			}
			t.Add(r.Suite, r.Role, b.Name, "BENCH", strings.Join(sortedStrings(m), ", "))
		}
		if r.Err != "" || r.ExitCode != 0 || r.Output.Panic != "" {
			if !r.Output.Failed(strict) {
				fail++ // the binary failed without a failing test: count it once
			}
			details = append(details, fmt.Sprintf("--- %s [%s]: exit %d %s %s; log %s", r.Suite, r.Role, r.ExitCode, r.Err, r.Output.Panic, r.Log))
		}
	}
	t.Write(w)
	for _, d := range details {
		fmt.Fprintln(w, d)
	}
	var boots []string
	for _, role := range []string{RoleSingleName, "a", "b"} {
		if d, ok := s.Boots[role]; ok {
			boots = append(boots, fmt.Sprintf("%s boot %s vm %s", role, d.Round(100*time.Millisecond), s.VMTime[role].Round(100*time.Millisecond)))
		}
	}
	fmt.Fprintf(w, "lab: build %s; %s; total %s\n", s.BuildDur.Round(100*time.Millisecond), strings.Join(boots, "; "), s.Total.Round(100*time.Millisecond))
	verdict := "PASS"
	if s.Failed(strict) {
		verdict = "FAIL"
	}
	// The verdict, then the counts alone on the last line (the plain form
	// CI systems read).
	fmt.Fprintf(w, "lab: %s\n", verdict)
	fmt.Fprintf(w, "lab: %d passed, %d failed, %d skipped\n", pass, fail, skip)
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

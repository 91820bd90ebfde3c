package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	texttable "github.com/erdmakit/erdmakit/internal/render/table"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// TableOptions say how a result is printed as text, the way the erdmakit
// commands print it without --json. The zero value is plain text with the
// problems' details only.
//
// Whether to colour is the caller's decision (the CLI colours a terminal,
// see its --color): this package looks at no terminal and no environment.
type TableOptions struct {
	// Color wraps the severity words (ok, warn, fail, skip) in ANSI colours.
	Color bool
	// Verbose prints the evidence and fix of every finding, not only of the
	// warnings and failures.
	Verbose bool
	// Hint, when set, may add a line to a finding's fix (the CLI names its
	// own flags there; library findings never do).
	Hint func(f health.Finding) string
	// Serve prints the servers' side of a perftest summary (what `erdmakit
	// perftest --serve` shows) instead of the clients'.
	Serve bool
	// RowsShown leaves out the result rows of an nccl run: they were printed
	// already as they arrived (NCCLLiveRow).
	RowsShown bool
}

// word is a severity word, coloured with o.Color.
func (o TableOptions) word(s string) string {
	if o.Color {
		return texttable.Severity(s)
	}
	return s
}

// newTable is a table whose column sev (-1: none) holds severity words,
// coloured with o.Color.
func (o TableOptions) newTable(sev int, header ...string) *texttable.Table {
	t := texttable.New(header...)
	t.Color, t.SeverityColumn = o.Color, sev
	return t
}

// write sends what was built to w in one write.
func write(w io.Writer, b *strings.Builder) error {
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFindingsTable prints findings the one way every erdmakit command
// shows them (doctor, nccl run): a RESULT/CHECK/SUMMARY table, then the
// evidence and the fix of every warning and failure (of every finding with
// Verbose).
func WriteFindingsTable(w io.Writer, fs []health.Finding, o TableOptions) error {
	var b strings.Builder
	writeFindings(&b, fs, o)
	return write(w, &b)
}

func writeFindings(b *strings.Builder, fs []health.Finding, o TableOptions) {
	t := o.newTable(0, "RESULT", "CHECK", "SUMMARY")
	for _, f := range fs {
		t.Add(string(f.Severity), f.ID, f.Summary)
	}
	_ = t.Write(b) // a strings.Builder does not fail
	for _, f := range fs {
		if f.Severity != health.Warn && f.Severity != health.Fail && !o.Verbose {
			continue
		}
		fmt.Fprintf(b, "\n%s %s: %s\n", o.word(string(f.Severity)), f.ID, f.Summary)
		for _, e := range f.Evidence {
			fmt.Fprintf(b, "    read: %s\n", e)
		}
		if step := f.Step(); step != "" {
			fmt.Fprintf(b, "    fix:  %s\n", step)
		}
		if o.Hint != nil {
			if h := o.Hint(f); h != "" {
				fmt.Fprintf(b, "    hint: %s\n", h)
			}
		}
	}
}

// severityCounts is "N ok, N warn, N fail, N skip" over fs: the doctor's
// status line and its section on the page.
func severityCounts(fs []health.Finding) string {
	counts := map[health.Severity]int{}
	for _, f := range fs {
		counts[f.Severity]++
	}
	return fmt.Sprintf("%d ok, %d warn, %d fail, %d skip", counts[health.OK], counts[health.Warn], counts[health.Fail], counts[health.Skip])
}

// WriteDoctorTable prints a doctor's report (doctor.Report) the way
// `erdmakit doctor` does: the host, the findings as WriteFindingsTable
// prints them, the status with the count per severity and the first step
// to take (the first failure's fix).
func WriteDoctorTable(w io.Writer, rep *erdma.Report, o TableOptions) error {
	var b strings.Builder
	root, typ := "/", "unknown"
	if rep.Host != nil {
		root = rep.Host.Root
		if rep.Host.Instance != nil && rep.Host.Instance.Type != "" {
			typ = rep.Host.Instance.Type + " (" + rep.Host.Instance.Source + ")"
		}
	}
	fmt.Fprintf(&b, "erdmakit doctor: host %s, instance type %s\n\n", root, typ)
	writeFindings(&b, rep.Findings, o)
	var next string
	for _, f := range rep.Findings {
		if f.Severity == health.Fail && f.Step() != "" {
			next = f.ID + ": " + f.Step()
			break
		}
	}
	fmt.Fprintf(&b, "\nstatus: %s (%s)\n", o.word(string(rep.Status)), severityCounts(rep.Findings))
	if next != "" {
		fmt.Fprintf(&b, "first step: %s\n", next)
	}
	return write(w, &b)
}

// WriteBandwidthTable prints a bandwidth report the way `erdmakit bw`
// does: one row per device and size with its counter proof, the totals
// per size when several devices ran, and the status line. Report.Errors
// are not printed (the CLI sends them to stderr).
func WriteBandwidthTable(w io.Writer, rep *perf.Report, o TableOptions) error {
	var b strings.Builder
	t := texttable.New("DEVICE", "SERVER", "QPS", "SIZE", "MESSAGES", "SECONDS", "AVG_GBPS", "PEAK_GBPS", "MPPS", "COUNTER_PROOF")
	for _, r := range rep.Results {
		t.Add(r.Device, r.ServerDevice, strconv.Itoa(r.QPs), units.Format(int64(r.Size), units.Compact), strconv.FormatUint(r.Messages, 10),
			fmt.Sprintf("%.3f", r.DurationS), fmt.Sprintf("%.3f", r.AvgGbps), fmt.Sprintf("%.3f", r.PeakGbps),
			fmt.Sprintf("%.4f", r.Mpps), proofText(r.TX))
	}
	_ = t.Write(&b)
	devs := map[string]bool{}
	for _, r := range rep.Results {
		devs[r.Device] = true
	}
	if len(devs) > 1 {
		tt := texttable.New("TOTAL", "DEVICES", "AVG_GBPS", "MPPS")
		for _, x := range rep.Totals {
			tt.Add(units.Format(int64(x.Size), units.Compact), strconv.Itoa(x.Devices), fmt.Sprintf("%.3f", x.AvgGbps), fmt.Sprintf("%.4f", x.Mpps))
		}
		b.WriteString("\n")
		_ = tt.Write(&b)
	}
	var expect string
	if rep.ExpectGbps > 0 {
		expect = fmt.Sprintf(" (expected at least %.1f Gbit/s in total)", rep.ExpectGbps)
	}
	b.WriteString("status: " + o.word(string(rep.Status)) + expect + "\n")
	return write(w, &b)
}

// proofText is a result's counter proof in one cell.
func proofText(p *perf.CounterProof) string {
	if p == nil {
		return "no counters"
	}
	word := "ok"
	if !p.OK {
		word = "SHORT"
	}
	return fmt.Sprintf("%s +%d %s (>= %d) %s", p.Counter, p.Delta, p.Unit, p.Want, word)
}

// us is microseconds as the latency tables print them.
func us(v float64) string { return fmt.Sprintf("%.2f", v) }

// WriteLatencyTable prints a latency report the way `erdmakit bw lat`
// does: one row per device and size with the statistics in microseconds,
// and the status line. Report.Errors are not printed.
func WriteLatencyTable(w io.Writer, rep *perf.LatencyReport, o TableOptions) error {
	var b strings.Builder
	t := texttable.New("DEVICE", "SERVER", "SIZE", "ITERATIONS", "MIN_US", "MEDIAN_US", "AVG_US", "STDEV_US", "P99_US", "P99.9_US", "MAX_US")
	for _, r := range rep.Results {
		t.Add(r.Device, r.ServerDevice, units.Format(int64(r.Size), units.Compact), strconv.Itoa(r.Iterations), us(r.MinUS), us(r.MedianUS), us(r.AvgUS),
			us(r.StdevUS), us(r.P99US), us(r.P999US), us(r.MaxUS))
	}
	_ = t.Write(&b)
	var expect string
	if rep.ExpectUS > 0 {
		expect = fmt.Sprintf(" (expected a median of at most %.2f us)", rep.ExpectUS)
	}
	b.WriteString("status: " + o.word(string(rep.Status)) + expect + "\n")
	return write(w, &b)
}

// perftestSide is the side of a pair a perftest table shows.
func perftestSide(r perftest.Run, serve bool) *perftest.Report {
	if serve {
		return r.Server
	}
	return r.Client
}

// WritePerftestTable prints an ib_write_bw summary the way `erdmakit
// perftest` does: one row per device and size (the servers' side with
// Serve), and the status line with the total. The runs' errors are not
// printed (see perftest.ErrorLines).
func WritePerftestTable(w io.Writer, rep *perftest.Summary, o TableOptions) error {
	var b strings.Builder
	t := texttable.New("DEVICE", "PORT", "SIZE", "ITERATIONS", "AVG_GBPS", "PEAK_GBPS", "MPPS", "ATTEMPTS")
	for _, r := range rep.Runs {
		side := perftestSide(r, o.Serve)
		if side == nil || len(side.Results) == 0 {
			t.Add(r.Device, strconv.Itoa(r.Port), "-", "-", "-", "-", "-", strconv.Itoa(r.Attempts))
			continue
		}
		for _, x := range side.Results {
			t.Add(r.Device, strconv.Itoa(r.Port), units.Format(x.Bytes, units.Compact), strconv.FormatInt(x.Iterations, 10),
				fmt.Sprintf("%.3f", x.BWAvgGbps), fmt.Sprintf("%.3f", x.BWPeakGbps), fmt.Sprintf("%.4f", x.MsgRateMpps), strconv.Itoa(r.Attempts))
		}
	}
	_ = t.Write(&b)
	fmt.Fprintf(&b, "status: %s (total %.3f Gbit/s)\n", o.word(string(rep.Status)), rep.TotalGbps)
	return write(w, &b)
}

// WritePerftestLatencyTable prints an ib_write_lat summary the way
// `erdmakit perftest lat` does: one row per device and size (the servers'
// side with Serve) in microseconds, and the status line with the judged
// median.
func WritePerftestLatencyTable(w io.Writer, rep *perftest.LatencySummary, o TableOptions) error {
	var b strings.Builder
	t := texttable.New("DEVICE", "PORT", "SIZE", "ITERATIONS", "MIN_US", "TYPICAL_US", "AVG_US", "STDEV_US", "P99_US", "P99.9_US", "MAX_US", "ATTEMPTS")
	for _, r := range rep.Runs {
		side := perftestSide(r, o.Serve)
		if side == nil || len(side.Latency) == 0 {
			t.Add(r.Device, strconv.Itoa(r.Port), "-", "-", "-", "-", "-", "-", "-", "-", "-", strconv.Itoa(r.Attempts))
			continue
		}
		for _, x := range side.Latency {
			t.Add(r.Device, strconv.Itoa(r.Port), units.Format(x.Bytes, units.Compact), strconv.FormatInt(x.Iterations, 10), us(x.MinUS), us(x.TypicalUS),
				us(x.AvgUS), us(x.StdevUS), us(x.P99US), us(x.P999US), us(x.MaxUS), strconv.Itoa(r.Attempts))
		}
	}
	_ = t.Write(&b)
	fmt.Fprintf(&b, "status: %s (median %.2f us)", o.word(string(rep.Status)), rep.MedianUS)
	if rep.ExpectUS > 0 {
		fmt.Fprintf(&b, ", expected at most %.2f us", rep.ExpectUS)
	}
	b.WriteString("\n")
	return write(w, &b)
}

// WriteFleetTable prints a fleet report the way `erdmakit fleet doctor`
// does: hosts by rank with their status and problems, the count per
// status, the checks that differ between hosts and the rendezvous's
// problems.
func WriteFleetTable(w io.Writer, rep *fleet.FleetReport, o TableOptions) error {
	var b strings.Builder
	t := o.newTable(2, "RANK", "HOST", "STATUS", "PROBLEMS")
	for _, h := range rep.Hosts {
		probs := strings.Join(h.Problems, ",")
		if h.Error != "" {
			probs = h.Error
		}
		t.Add(strconv.Itoa(h.Rank), h.Host, string(h.Status), probs)
	}
	_ = t.Write(&b)
	fmt.Fprintf(&b, "\n%d hosts:", rep.Size)
	for _, s := range fleet.HostStates() {
		if n := len(rep.ByStatus[s]); n > 0 {
			fmt.Fprintf(&b, " %d %s", n, s)
		}
	}
	fmt.Fprintln(&b)
	if len(rep.Differences) > 0 {
		fmt.Fprintln(&b, "\nChecks that differ between hosts (the rarest result first):")
		d := o.newTable(1, "CHECK", "SEVERITY", "HOSTS", "SUMMARY")
		for _, diff := range rep.Differences {
			for _, gr := range diff.Groups {
				d.Add(diff.ID, string(gr.Severity), hostList(gr.Hosts, 6), gr.Summary)
			}
		}
		_ = d.Write(&b)
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(&b, "rendezvous:", e)
	}
	return write(w, &b)
}

// hostList shortens a long host list: "a, b, c and 12 more".
func hostList(hosts []string, max int) string {
	if len(hosts) <= max {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:max], ", "), len(hosts)-max)
}

// pair is the hosts of a culprit: "a <-> b".
func pair(hosts []string) string { return strings.Join(hosts, " <-> ") }

// WriteMeshTable prints a mesh report the way `erdmakit bw mesh` does:
// the summary line, the pairwise Gbit/s matrix (up to 16 hosts), the
// culprits (dead host, bad host, bad link, transient) and the rendezvous's
// problems. It has no severity words: Color changes nothing.
func WriteMeshTable(w io.Writer, rep *fleet.MeshReport, o TableOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hosts, %d rounds, %d pair tests; median %.2f Gbit/s", len(rep.Hosts), rep.Rounds, len(rep.Results), rep.MedianGbps)
	if rep.ExpectGbps > 0 {
		fmt.Fprintf(&b, ", expected %.2f", rep.ExpectGbps)
	}
	fmt.Fprintln(&b)
	if len(rep.Hosts) <= 16 {
		t := texttable.New(append([]string{"GBPS"}, rep.Hosts...)...)
		tested := untestedPairs(rep)
		for i, row := range rep.Matrix {
			cells := []string{hostAt(rep.Hosts, i)}
			for j, v := range row {
				switch {
				case i == j:
					cells = append(cells, "-")
				case tested != nil && i < len(tested) && j < len(tested[i]) && !tested[i][j]:
					cells = append(cells, ".")
				case v == nil:
					cells = append(cells, "fail")
				default:
					cells = append(cells, fmt.Sprintf("%.1f", *v))
				}
			}
			t.Add(cells...)
		}
		fmt.Fprintln(&b)
		_ = t.Write(&b)
		if tested != nil {
			fmt.Fprintln(&b, "(.: not tested; the screen tests each host against a few partners, --full-mesh every pair)")
		}
	}
	culprits := texttable.New("VERDICT", "HOSTS", "REASON", "EVIDENCE")
	add := func(kind string, cs []fleet.Culprit) {
		for _, c := range cs {
			culprits.Add(kind, pair(c.Hosts), c.Reason, strings.Join(c.Evidence, "; "))
		}
	}
	add("dead host", rep.DeadHosts)
	add("bad host", rep.BadHosts)
	add("bad link", rep.BadLinks)
	for _, p := range rep.Transient {
		culprits.Add("transient", hostAt(rep.Hosts, p.Server)+" <-> "+hostAt(rep.Hosts, p.Client), "slow once, fine when tested again", "")
	}
	if len(culprits.Rows) > 0 {
		fmt.Fprintln(&b)
		_ = culprits.Write(&b)
	} else {
		fmt.Fprintln(&b, "\nno outliers: every pair within the expectation and the fleet median")
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(&b, "rendezvous:", e)
	}
	return write(w, &b)
}

// WriteProofTable prints a proof the way `erdmakit fleet prove` does: the
// verdict, the stages, the culprits each with the first thing to fix, the
// hosts that are not ok, the rendezvous's problems.
func WriteProofTable(w io.Writer, p *fleet.Proof, o TableOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "erdmakit fleet prove: %d ranks, verdict %s\n\n", p.Size, strings.ToUpper(string(p.Verdict)))
	st := o.newTable(1, "STAGE", "STATUS", "SECONDS", "SUMMARY")
	for _, s := range p.Stages {
		st.Add(s.Name, string(stageStatus(p, s)), fmt.Sprintf("%.1f", s.Seconds), s.Summary)
	}
	_ = st.Write(&b)
	if len(p.Culprits) > 0 {
		fmt.Fprintf(&b, "\nCulprits (%d), failing first, each with the first thing to fix:\n", len(p.Culprits))
		for i, c := range p.Culprits {
			hosts := pair(c.Hosts)
			if hosts == "" {
				hosts = "(all hosts)"
			}
			fmt.Fprintf(&b, "%d. %s %s %s: %s\n", i+1, o.word(string(c.Severity)), c.Kind, hosts, c.Reason)
			if len(c.Devices) > 0 {
				fmt.Fprintf(&b, "    eri:  %s\n", strings.Join(c.Devices, ", "))
			}
			for _, e := range c.Evidence {
				fmt.Fprintf(&b, "    saw:  %s\n", e)
			}
			fmt.Fprintf(&b, "    fix:  %s", c.Fix)
			if c.FixFrom != "" {
				fmt.Fprintf(&b, " (%s)", c.FixFrom)
			}
			fmt.Fprintln(&b)
		}
	}
	var notOK int
	ht := o.newTable(2, "RANK", "HOST", "STATUS", "DOCTOR", "MESH", "PROBLEMS")
	for _, h := range p.Hosts {
		if h.Status == fleet.HostOK && (h.Mesh == "ok" || h.Mesh == "not tested") {
			continue
		}
		notOK++
		var probs []string
		for _, f := range h.Findings {
			probs = append(probs, f.ID)
		}
		mesh := h.Mesh
		if h.MeshNote != "" {
			mesh += " (" + h.MeshNote + ")"
		}
		ht.Add(strconv.Itoa(h.Rank), h.Host, string(h.Status), string(h.Doctor), mesh, strings.Join(probs, ","))
	}
	if notOK > 0 {
		fmt.Fprintf(&b, "\nHosts not ok, or on a bad link (%d of %d):\n", notOK, len(p.Hosts))
		_ = ht.Write(&b)
	}
	for _, e := range p.Errors {
		fmt.Fprintln(&b, "error:", e)
	}
	if !p.Authenticated && p.Size > 1 {
		fmt.Fprintln(&b, "\nthe ranks were not authenticated (ERDMAKIT_FLEET_SECRET not set)")
	}
	verdict := string(p.Verdict)
	if p.Interrupted {
		verdict += " (interrupted: stages not reached are listed)"
	}
	fmt.Fprintf(&b, "\nverdict: %s (status %s)\n", verdict, o.word(string(p.Status)))
	return write(w, &b)
}

// WriteNCCLTestsTable prints an nccl-tests result's rows as an aligned
// table (the columns of nccl-tests' own output; GB/s with two decimals,
// #wrong "N/A" where the log said so). It has no severity words: Color
// changes nothing.
func WriteNCCLTestsTable(w io.Writer, res *ncclog.TestResult, o TableOptions) error {
	var b strings.Builder
	writeNCCLRows(&b, res)
	return write(w, &b)
}

func writeNCCLRows(b *strings.Builder, res *ncclog.TestResult) {
	t := texttable.New("SIZE", "COUNT", "TYPE", "REDOP", "ROOT",
		"TIME(us)", "ALGBW", "BUSBW", "#WRONG", "IP TIME(us)", "IP ALGBW", "IP BUSBW", "IP #WRONG")
	if res != nil {
		for _, r := range res.Rows {
			t.Add(ncclRowCells(r)...)
		}
	}
	_ = t.Write(b)
}

// ncclRowCells are a row's cells in WriteNCCLTestsTable's columns.
func ncclRowCells(r ncclog.Row) []string {
	m := func(x ncclog.Measurement) []string {
		return []string{strconv.FormatFloat(x.TimeUS, 'f', -1, 64), fmt.Sprintf("%.2f", x.AlgBWGB), fmt.Sprintf("%.2f", x.BusBWGB), x.Wrong.String()}
	}
	root := ""
	if r.Root >= 0 {
		root = strconv.Itoa(r.Root)
	}
	cells := []string{units.Format(r.Size, units.Label), strconv.FormatInt(r.Count, 10), r.Type, r.Redop, root}
	cells = append(cells, m(r.OutOfPlace)...)
	return append(cells, m(r.InPlace)...)
}

// WriteNCCLRunTable prints an nccl run's report the way `erdmakit nccl
// run` does: the result rows (unless RowsShown), the average bus
// bandwidth, the findings as WriteFindingsTable prints them and the
// status.
func WriteNCCLRunTable(w io.Writer, rep *nccl.RunReport, o TableOptions) error {
	var b strings.Builder
	res := rep.TestResult
	if res == nil {
		res = &ncclog.TestResult{}
	}
	if !o.RowsShown && len(res.Rows) > 0 {
		writeNCCLRows(&b, res)
	}
	if res.AvgBusBW > 0 {
		fmt.Fprintf(&b, "avg bus bandwidth %.3f GB/s\n", res.AvgBusBW)
	}
	if o.RowsShown || len(res.Rows) > 0 {
		fmt.Fprintln(&b)
	}
	writeFindings(&b, rep.Findings, o)
	fmt.Fprintln(&b, "status:", o.word(string(rep.Status)))
	return write(w, &b)
}

// NCCLLiveHeader heads the rows NCCLLiveRow prints one at a time, as an
// nccl run delivers them (nccl.RunOptions.OnRow), in fixed-width columns.
const NCCLLiveHeader = "        SIZE   TIME(us)    ALGBW    BUSBW  #WRONG   (out-of-place; GB/s)"

// NCCLLiveRow formats one row for NCCLLiveHeader's columns.
func NCCLLiveRow(r ncclog.Row) string {
	return fmt.Sprintf("%12s %10.1f %8.2f %8.2f %7v", units.Format(r.Size, units.Label), r.OutOfPlace.TimeUS, r.OutOfPlace.AlgBWGB, r.OutOfPlace.BusBWGB, r.OutOfPlace.Wrong)
}

// stageInterrupted is how a page and a table show a stage of fleet prove
// that began and was interrupted (it may have measured something: a mesh's
// pairs, NCCL's rows); "not reached" is kept for a stage never begun.
const stageInterrupted health.Severity = "interrupted"

// stageStatus is s's status as shown: an interrupted stage that began
// (it ran for a while, or its report holds what it measured) is
// "interrupted", not fleet's "not reached".
func stageStatus(p *fleet.Proof, s fleet.Stage) health.Severity {
	if s.Status != fleet.StageNotReached {
		return s.Status.Severity()
	}
	began := s.Seconds > 0
	switch s.Name {
	case fleet.StageMesh:
		began = began || (p.Mesh != nil && len(p.Mesh.Results) > 0)
	case fleet.StageNCCL:
		began = began || p.NCCL != nil
	case fleet.StageDoctor:
		began = began || p.Doctor != nil
	}
	if began {
		return stageInterrupted
	}
	return health.Severity(s.Status) // shown as is: "not reached"
}

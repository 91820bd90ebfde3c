package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/plot"
)

// page is what the template renders.
type page struct {
	Title     string
	DocTitle  string        // the window's title: Title and the verdict, said once
	Verdict   fleet.Verdict // fleet prove's word (proven, degraded, broken) when a proof is among the inputs
	Generated string
	Status    health.Severity // the worst over the inputs
	Headline  string
	Lines     []line // each input's status, failing first
	Culprits  []culprit
	Notes     []string // what the page could not show, redaction, newer schemas
	Hosts     []hostRow
	Findings  []finding
	Checks    []checkRow // per check id over many hosts
	OKHidden  int        // ok/skip findings left out of Findings (too many)
	Sections  []*section
	Version   string
}

// finding is one row of the findings table.
type finding struct {
	Host        string
	ID          string
	Severity    health.Severity
	Summary     string
	Evidence    []string
	Remediation string // the step to take (health.Finding.Step)
	ByHand      string // the check's own words, where erdmakit's fix is the step
	Source      string // the input it came from
	Replaces    string // the older inputs that named the same host and check
	newness     int    // its input's place from the oldest (newness)
	doctor      bool   // one of a host's doctor checks (they go together)
}

// line is one input in the verdict.
type line struct {
	Status     health.Severity
	Name, Kind string
	Anchor     string
}

// culprit is one of fleet prove's culprits, shown with the verdict.
type culprit struct {
	Kind, Hosts, Reason, Fix, FixFrom string
	Severity                          health.Severity
	newness                           int
}

type hostRow struct {
	Host     string
	Status   fleet.HostState
	Fail     int
	Warn     int
	Problems []string
	Source   string // the inputs its findings come from
	newness  int
	doctor   bool // the input ran the doctor on the host (its checks replace older ones)
}

type checkRow struct {
	ID                   string
	OK, Skip, Warn, Fail int
	Hosts                string   // the hosts where it warns or fails
	HostList             []string // the same, one by one
	Status               health.Severity
}

// section is one input's part of the page.
type section struct {
	Name   string
	Kind   Kind
	Status health.Severity
	Facts  [][2]string
	Tables []table
	Charts []chart
	Notes  []string
}

type table struct {
	Caption string
	Head    []string
	Rows    []row
}

type row struct {
	Status health.Severity // colours the row ("" for none)
	Cells  []string
}

type chart struct {
	Title string
	SVG   template.HTML
}

// Bounds on what one page shows, whatever the inputs hold: a result with
// a million findings or a megabyte of evidence still makes a page a
// browser opens (the rest is counted, not dropped silently).
const (
	maxFindings = 5000 // rows of the findings table
	maxEvidence = 24   // evidence lines per finding
	maxRows     = 2000 // rows per other table
	maxText     = 4096 // bytes of one string
)

// clip shortens s to maxText bytes (at a rune boundary), saying so.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" ... (%d more bytes)", len(s)-cut)
}

// bound clips a finding's strings and evidence.
func (f finding) bound() finding {
	f.Host, f.ID, f.Summary, f.Remediation, f.ByHand = clip(f.Host), clip(f.ID), clip(f.Summary), clip(f.Remediation), clip(f.ByHand)
	ev := f.Evidence
	if len(ev) > maxEvidence {
		ev = append(ev[:maxEvidence:maxEvidence], fmt.Sprintf("... and %d more lines", len(f.Evidence)-maxEvidence))
	}
	f.Evidence = make([]string, len(ev))
	for i, e := range ev {
		f.Evidence[i] = clip(e)
	}
	return f
}

// bound clips a table's rows and cells.
func (t table) bound() table {
	rows := t.Rows
	if len(rows) > maxRows {
		t.Caption += fmt.Sprintf(" (the first %d of %d rows)", maxRows, len(rows))
		rows = rows[:maxRows]
	}
	t.Rows = make([]row, len(rows))
	for i, r := range rows {
		cells := make([]string, len(r.Cells))
		for j, c := range r.Cells {
			cells[j] = clip(c)
		}
		t.Rows[i] = row{Status: r.Status, Cells: cells}
	}
	return t
}

// maxOKFindings: up to this many ok and skip findings are listed in full;
// past it (a fleet) only the per-check table counts them, so that 256
// hosts' page stays small.
const maxOKFindings = 400

// build turns the inputs into the page.
func build(opts Options, inputs []Input) (*page, error) {
	p := &page{Title: opts.Title, Status: health.OK}
	if p.Title == "" {
		p.Title = "erdmakit report"
	}
	if !opts.Generated.IsZero() {
		p.Generated = opts.Generated.UTC().Format("2006-01-02 15:04 UTC")
	}
	var all []finding
	var rows []hostRow
	var culprits []culprit
	order := newness(inputs)
	for idx, in := range inputs {
		s := &section{Name: in.Name, Kind: in.Kind}
		if len(in.unknown) > 0 {
			keys := in.unknown
			if len(keys) > 10 {
				keys = append(keys[:10:10], fmt.Sprintf("and %d more", len(in.unknown)-10))
			}
			n := fmt.Sprintf("%s has keys this erdmakit does not know (%s): it may come from a newer erdmakit; the page shows what this version knows",
				in.Name, strings.Join(keys, ", "))
			s.Notes = append(s.Notes, n)
			p.Notes = append(p.Notes, n)
		}
		s.Name = displayName(in.Name)
		fs, hs := buildSection(s, in)
		if pr, ok := in.value.(*fleet.Proof); ok {
			p.Verdict = fleet.WorseVerdict(p.Verdict, pr.Verdict)
			for _, c := range pr.Culprits {
				culprits = append(culprits, culprit{Kind: c.Kind, Hosts: pair(c.Hosts), Reason: c.Reason,
					Fix: c.Fix, FixFrom: c.FixFrom, Severity: c.Severity, newness: order[idx]})
			}
		}
		if m, ok := in.value.(*fleet.MeshReport); ok {
			culprits = append(culprits, meshCulprits(m, s.Name, order[idx])...)
		}
		for i := range fs {
			fs[i].Source, fs[i].newness = s.Name, order[idx]
			// The verdict is never better than a finding on the page (a
			// setup dry run is "ok" as a plan while the host fails now).
			s.Status = worst(s.Status, fs[i].Severity)
		}
		all = append(all, fs...)
		for _, h := range hs {
			h.Source, h.newness = s.Name, order[idx]
			rows = append(rows, h)
		}
		for i := range s.Tables {
			s.Tables[i] = s.Tables[i].bound()
		}
		for i := range s.Facts {
			s.Facts[i][1] = clip(s.Facts[i][1])
		}
		p.Status = worst(p.Status, s.Status)
		p.Lines = append(p.Lines, line{Status: s.Status, Name: s.Name, Kind: string(in.Kind), Anchor: fmt.Sprintf("s%d", len(p.Sections))})
		p.Sections = append(p.Sections, s)
	}
	sort.SliceStable(p.Lines, func(i, j int) bool { return sevOrder(p.Lines[i].Status) > sevOrder(p.Lines[j].Status) })
	// One host, one check, one result: the newest input's.
	var merged int
	all, merged = mergeFindings(all, rows)
	if merged > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d host check(s) are named by more than one input: each is shown once, from the newest input (%s); the findings say which, and which older one they replace",
			merged, newestRule(inputs)))
	}
	p.Culprits = mergeCulprits(culprits)
	p.Hosts = hostRows(rows, all)
	// Findings: failing first, then warn, skip, ok; by host and id within.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := sevOrder(all[i].Severity), sevOrder(all[j].Severity)
		if a != b {
			return a > b
		}
		if all[i].Host != all[j].Host {
			return all[i].Host < all[j].Host
		}
		return false
	})
	okCount := 0
	for _, f := range all {
		if f.Severity.Rank() == 0 && f.Severity.Valid() {
			okCount++
		}
	}
	for _, f := range all {
		if okCount > maxOKFindings && f.Severity.Rank() == 0 && f.Severity.Valid() {
			p.OKHidden++
			continue
		}
		if len(p.Findings) == maxFindings {
			p.Notes = append(p.Notes, fmt.Sprintf("only the first %d findings are listed (failing first)", maxFindings))
			break
		}
		p.Findings = append(p.Findings, f.bound())
	}
	p.Checks = checkTable(all)
	sort.SliceStable(p.Hosts, func(i, j int) bool {
		a, b := p.Hosts[i].Status.Order(), p.Hosts[j].Status.Order()
		if a != b {
			return a > b
		}
		return p.Hosts[i].Fail+p.Hosts[i].Warn > p.Hosts[j].Fail+p.Hosts[j].Warn
	})
	p.Headline = headline(p, all)
	p.DocTitle = docTitle(p)
	return p, nil
}

// displayName is a file's base name (the page is read elsewhere; the
// directory it was made in says nothing there), other names as they are.
func displayName(name string) string {
	if strings.ContainsRune(name, '/') && !strings.HasSuffix(name, "/") {
		return filepath.Base(name)
	}
	return name
}

// sevOrder sorts severities as fleet sorts host states (fleet.HostState.Order):
// fail (and a host's missing, error) above warn above skip above ok.
func sevOrder(s health.Severity) int { return fleet.StateOf(s).Order() }

// worst folds s into status a: a severity as it is, a host's missing or
// error as fail, not reached as skip (fleet.HostState.Severity).
func worst(a, s health.Severity) health.Severity { return health.Worst(a, fleet.StateOf(s).Severity()) }

// headline is the verdict in one sentence.
func headline(p *page, all []finding) string {
	var fail, warn int
	failHosts := map[string]bool{}
	for _, f := range all {
		switch {
		case f.Severity == health.Fail || !f.Severity.Valid():
			fail++
			failHosts[f.Host] = true
		case f.Severity == health.Warn:
			warn++
		}
	}
	var b strings.Builder
	if p.Verdict != "" {
		b.WriteString(strings.ToUpper(string(p.Verdict)))
		if len(p.Culprits) > 0 {
			fmt.Fprintf(&b, ": %d culprit(s)", len(p.Culprits))
			if len(p.Hosts) > 1 {
				fmt.Fprintf(&b, " among %d hosts", len(p.Hosts))
			}
		} else if len(p.Hosts) > 1 {
			fmt.Fprintf(&b, ": %d hosts", len(p.Hosts))
		}
		if p.Status != health.OK {
			fmt.Fprintf(&b, "; %d failing and %d warning finding(s)", fail, warn)
		}
		return b.String()
	}
	b.WriteString(strings.ToUpper(string(p.Status)))
	switch p.Status {
	case health.OK:
		b.WriteString(": every check passed")
	default:
		fmt.Fprintf(&b, ": %d failing and %d warning finding(s)", fail, warn)
		if len(failHosts) > 0 && len(p.Hosts) > 1 {
			fmt.Fprintf(&b, " on %d of %d host(s)", len(failHosts), len(p.Hosts))
		}
	}
	if len(p.Hosts) > 1 {
		fmt.Fprintf(&b, "; %d hosts", len(p.Hosts))
	}
	return b.String()
}

// checkTable counts each check id's severities over the hosts.
func checkTable(all []finding) []checkRow {
	rows := map[string]*checkRow{}
	listed := map[string]bool{}
	var order []string
	for _, f := range all {
		r := rows[f.ID]
		if r == nil {
			r = &checkRow{ID: f.ID, Status: health.OK}
			rows[f.ID] = r
			order = append(order, f.ID)
		}
		switch f.Severity {
		case health.OK:
			r.OK++
		case health.Skip:
			r.Skip++
		case health.Warn:
			r.Warn++
		default:
			r.Fail++
		}
		r.Status = worst(r.Status, f.Severity)
		if f.Severity.Rank() > 0 && f.Host != "" && len(r.Hosts) < 400 && !listed[f.ID+"\x00"+f.Host] {
			listed[f.ID+"\x00"+f.Host] = true
			if r.Hosts != "" {
				r.Hosts += ", "
			}
			r.Hosts += f.Host
			r.HostList = append(r.HostList, f.Host)
		}
	}
	out := make([]checkRow, 0, len(order))
	for _, id := range order {
		out = append(out, *rows[id])
	}
	sort.SliceStable(out, func(i, j int) bool { return sevOrder(out[i].Status) > sevOrder(out[j].Status) })
	return out
}

// buildSection fills s from one input and returns its findings and hosts.
func buildSection(s *section, in Input) ([]finding, []hostRow) {
	switch v := in.value.(type) {
	case *erdma.Report:
		return doctorSection(s, in.Name, v)
	case *fleet.FleetReport:
		return fleetSection(s, v)
	case *fleet.Proof:
		return proveSection(s, v)
	case *fleet.MeshReport:
		return meshSection(s, v)
	case *perf.Report:
		return bwSection(s, v)
	case *perf.LatencyReport:
		return latencySection(s, v)
	case *perftest.Summary:
		return perftestSection(s, v)
	case *perftest.LatencySummary:
		return perftestLatSection(s, v)
	case *nccl.RunReport:
		return ncclRunSection(s, v)
	case *ncclog.TestResult:
		return ncclTestsSection(s, v)
	case *ncclog.Summary:
		return ncclLogSection(s, v)
	case *perftest.Report:
		return perftestLogSection(s, v)
	case *smitopo.Matrix:
		return topoSection(s, v)
	case *SetupResult:
		return setupSection(s, in.Name, v)
	}
	s.Status = health.Fail
	s.Notes = append(s.Notes, fmt.Sprintf("%T: not rendered", in.value))
	return nil, nil
}

// addChart draws one chart into s; a chart with nothing to draw is left
// out, a failing one noted.
func (s *section) addChart(title string, draw func(w io.Writer) error) {
	var b bytes.Buffer
	if err := draw(&b); err != nil {
		if !errors.Is(err, plot.ErrNoData) {
			s.Notes = append(s.Notes, fmt.Sprintf("chart %q not drawn: %v", title, err))
		}
		return
	}
	s.Charts = append(s.Charts, chart{Title: title, SVG: template.HTML(inlineSVG(b.Bytes()))})
}

// inlineSVG drops the XML prolog and comments before <svg so that the
// chart can sit inside HTML.
func inlineSVG(b []byte) string {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	return string(b)
}

func findingsOf(host string, fs []health.Finding) []finding {
	out := make([]finding, 0, len(fs))
	for _, f := range fs {
		row := finding{Host: host, ID: f.ID, Severity: f.Severity, Summary: f.Summary, Evidence: f.Evidence, Remediation: f.Step()}
		if f.Fix != "" && f.Remediation != f.Fix {
			row.ByHand = f.Remediation
		}
		out = append(out, row)
	}
	return out
}

func hostOf(fs []finding, host string, status fleet.HostState) hostRow {
	h := hostRow{Host: host, Status: status}
	for _, f := range fs {
		switch {
		case f.Severity == health.Warn:
			h.Warn++
			h.Problems = append(h.Problems, f.ID)
		case f.Severity.Rank() == 2:
			h.Fail++
			h.Problems = append(h.Problems, f.ID)
		}
	}
	return h
}

func doctorSection(s *section, name string, r *erdma.Report) ([]finding, []hostRow) {
	s.Status = r.Status
	host := name
	if r.Host != nil {
		if r.Host.Hostname != "" {
			host = r.Host.Hostname
		}
		s.Facts = append(s.Facts, [2]string{"host", host})
		if r.Host.Instance != nil && r.Host.Instance.Type != "" {
			s.Facts = append(s.Facts, [2]string{"instance type", r.Host.Instance.Type})
		}
		if r.Host.Kernel != "" {
			s.Facts = append(s.Facts, [2]string{"kernel", r.Host.Kernel})
		}
		var devs []string
		for _, d := range r.Host.Devices {
			devs = append(devs, d.Name)
		}
		s.Facts = append(s.Facts, [2]string{"RDMA devices", orNone(strings.Join(devs, ", "))})
	}
	s.Facts = append(s.Facts, [2]string{"findings", severityCounts(r.Findings)})
	fs := findingsOf(host, r.Findings)
	for i := range fs {
		fs[i].doctor = true
	}
	hr := hostOf(fs, host, fleet.StateOf(r.Status))
	hr.doctor = true
	return fs, []hostRow{hr}
}

func fleetSection(s *section, r *fleet.FleetReport) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"hosts", fmt.Sprint(r.Size)},
		[2]string{"authenticated ranks", yesNo(r.Authenticated)})
	if r.Interrupted {
		s.Facts = append(s.Facts, [2]string{"interrupted", "yes: hosts not reached say nothing about their health"})
	}
	// A check's severity and summary per host, from the differences; a
	// problem the same on every host is not among them.
	type key struct{ host, id string }
	diff := map[key]fleet.SeverityGroup{}
	t := table{Caption: "checks whose result differs between hosts (the rarest first)", Head: []string{"check", "severity", "hosts", "summary"}}
	for _, d := range r.Differences {
		for _, g := range d.Groups {
			for _, h := range g.Hosts {
				diff[key{h, d.ID}] = g
			}
			t.Rows = append(t.Rows, row{Status: g.Severity, Cells: []string{d.ID, string(g.Severity), hostList(g.Hosts, 12), g.Summary}})
		}
	}
	if len(t.Rows) > 0 {
		s.Tables = append(s.Tables, t)
	}
	var fs []finding
	var hs []hostRow
	for _, h := range r.Hosts {
		hr := hostRow{Host: h.Host, Status: h.Status, doctor: true}
		if h.Error != "" {
			id := "host-" + strings.ReplaceAll(string(h.Status), " ", "-")
			// The finding says the host's state (missing, error) as is.
			f := finding{Host: h.Host, ID: id, Severity: health.Severity(h.Status), Summary: h.Error, doctor: true}
			if h.Status == fleet.NotReached {
				f.Severity = health.Skip
			}
			fs = append(fs, f)
			hr.Problems = append(hr.Problems, id)
			if f.Severity.Rank() == 2 {
				hr.Fail++
			}
		}
		for _, id := range h.Problems {
			g, ok := diff[key{h.Host, id}]
			f := finding{Host: h.Host, ID: id, Severity: g.Severity, Summary: g.Summary, doctor: true}
			if !ok {
				f.Severity = h.Status.Severity()
				f.Summary = "the same on every host (fleet doctor gives no summary; the host's doctor --json has the evidence)"
			}
			fs = append(fs, f)
			hr.Problems = append(hr.Problems, id)
			if f.Severity == health.Warn {
				hr.Warn++
			} else {
				hr.Fail++
			}
		}
		hs = append(hs, hr)
	}
	fs = append(fs, failures("fleet-rendezvous", r.Errors)...)
	return fs, hs
}

func meshSection(s *section, r *fleet.MeshReport) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"hosts", fmt.Sprint(len(r.Hosts))},
		[2]string{"rounds", fmt.Sprint(r.Rounds)},
		[2]string{"median", fmt.Sprintf("%.1f Gbit/s", r.MedianGbps)})
	if r.ExpectGbps > 0 {
		s.Facts = append(s.Facts, [2]string{"expected", fmt.Sprintf("%.1f Gbit/s", r.ExpectGbps)})
	}
	s.Facts = append(s.Facts, [2]string{"authenticated ranks", yesNo(r.Authenticated)})
	if r.Interrupted {
		s.Facts = append(s.Facts, [2]string{"interrupted", fmt.Sprintf("yes, after %d pair(s) measured; %d rank(s) not reached (never joined)", len(r.Results), len(r.NotReached))})
	}
	var fs []finding
	culprits := func(id string, sev health.Severity, cs []fleet.Culprit, fix string) {
		for _, c := range cs {
			fs = append(fs, finding{Host: pair(c.Hosts), ID: id, Severity: sev, Summary: c.Reason, Evidence: c.Evidence, Remediation: fix})
		}
	}
	culprits("mesh-dead-host", health.Fail, r.DeadHosts, fixDeadHost)
	culprits("mesh-bad-host", health.Fail, r.BadHosts, fixBadHost)
	culprits("mesh-bad-link", health.Fail, r.BadLinks, fixBadLink)
	for _, t := range r.Transient {
		fs = append(fs, finding{Host: hostAt(r.Hosts, t.Server) + " <-> " + hostAt(r.Hosts, t.Client), ID: "mesh-transient", Severity: health.Warn,
			Summary: "an outlier in the mesh that was fine when tested again"})
	}
	fs = append(fs, failures("mesh-rendezvous", r.Errors)...)
	hs := make([]hostRow, len(r.Hosts))
	at := map[string]int{}
	for i, h := range r.Hosts {
		hs[i] = hostRow{Host: h, Status: fleet.HostOK}
		at[h] = i
	}
	for _, f := range fs {
		if f.Severity.Rank() == 0 {
			continue
		}
		for _, h := range strings.Split(f.Host, " <-> ") {
			if i, ok := at[h]; ok {
				hs[i].Status = fleet.WorseState(hs[i].Status, fleet.StateOf(f.Severity))
				hs[i].Problems = append(hs[i].Problems, f.ID)
				if f.Severity == health.Warn {
					hs[i].Warn++
				} else {
					hs[i].Fail++
				}
			}
		}
	}
	band := fmt.Sprintf("at least 80%% of the median %.1f Gbit/s (%.1f; the mesh has no expectation)", r.MedianGbps, 0.8*r.MedianGbps)
	if r.ExpectGbps > 0 {
		band = fmt.Sprintf("at least 90%% of the expected %.1f Gbit/s (%.1f)", r.ExpectGbps, 0.9*r.ExpectGbps)
	}
	mesh, untested := MeshOf(r), ""
	if mesh.Tested != nil {
		untested = " Pale grey: not tested (the screen tests each host against a few partners; --full-mesh tests every pair)."
	}
	s.addChart("pairwise write bandwidth (Gbit/s). Blue: the pair is as expected, "+band+
		"; a healthy mesh is all blue. Yellow to red: slower, the redder the slower. Grey: no figure (the test failed)."+untested+" White: a host with itself.",
		func(w io.Writer) error { return plot.Heatmap(w, mesh) })
	return fs, hs
}

func hostAt(hosts []string, i int) string {
	if i >= 0 && i < len(hosts) {
		return hosts[i]
	}
	return fmt.Sprintf("position %d", i)
}

// failures are a result's error lines as failing findings of one id.
func failures(id string, errs []string) []finding {
	var fs []finding
	for _, e := range errs {
		fs = append(fs, finding{ID: id, Severity: health.Fail, Summary: e})
	}
	return fs
}

func bwSection(s *section, r *perf.Report) ([]finding, []hostRow) {
	s.Status = r.Status
	if r.ExpectGbps > 0 {
		s.Facts = append(s.Facts, [2]string{"expected", fmt.Sprintf("%.1f Gbit/s in total", r.ExpectGbps)})
	}
	t := table{Caption: "RDMA write bandwidth per device", Head: []string{"device", "peer", "size", "QPs", "avg Gbit/s", "peak Gbit/s", "Mpps"}}
	for _, x := range r.Results {
		t.Rows = append(t.Rows, row{Cells: []string{x.Device, x.ServerDevice, units.Format(int64(x.Size), units.Compact), fmt.Sprint(x.QPs),
			fmt.Sprintf("%.2f", x.AvgGbps), fmt.Sprintf("%.2f", x.PeakGbps), fmt.Sprintf("%.3f", x.Mpps)}})
	}
	for _, x := range r.Totals {
		t.Rows = append(t.Rows, row{Status: r.Status, Cells: []string{"total", fmt.Sprintf("%d device(s)", x.Devices), units.Format(int64(x.Size), units.Compact), "",
			fmt.Sprintf("%.2f", x.AvgGbps), fmt.Sprintf("%.2f", x.PeakGbps), fmt.Sprintf("%.3f", x.Mpps)}})
	}
	s.Tables = append(s.Tables, t)
	fs := failures("bw-error", r.Errors)
	if r.Status == health.Warn {
		fs = append(fs, finding{ID: "bw-below-expectation", Severity: health.Warn,
			Summary: fmt.Sprintf("the total is below the expected %.1f Gbit/s", r.ExpectGbps)})
	}
	s.addChart("RDMA write bandwidth against message size", func(w io.Writer) error {
		return plot.Sweep(w, "erdmakit bw: RDMA write bandwidth", BandwidthOf(r.Results))
	})
	return fs, nil
}

func latencySection(s *section, r *perf.LatencyReport) ([]finding, []hostRow) {
	s.Status = r.Status
	if r.ExpectUS > 0 {
		s.Facts = append(s.Facts, [2]string{"expected", fmt.Sprintf("median at most %.2f µs", r.ExpectUS)})
	}
	t := table{Caption: "RDMA write latency (one way, µs)", Head: []string{"device", "peer", "size", "iterations", "min", "median", "avg", "p99", "p99.9", "max"}}
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, x := range r.Results {
		t.Rows = append(t.Rows, row{Cells: []string{x.Device, x.ServerDevice, units.Format(int64(x.Size), units.Compact), fmt.Sprint(x.Iterations),
			f2(x.MinUS), f2(x.MedianUS), f2(x.AvgUS), f2(x.P99US), f2(x.P999US), f2(x.MaxUS)}})
	}
	s.Tables = append(s.Tables, t)
	fs := failures("lat-error", r.Errors)
	if r.Status == health.Warn {
		fs = append(fs, finding{ID: "lat-above-expectation", Severity: health.Warn,
			Summary: fmt.Sprintf("a median is above the expected %.2f µs", r.ExpectUS)})
	}
	s.addChart("RDMA write latency", func(w io.Writer) error {
		return plot.LatencyHistogram(w, "erdmakit bw lat: RDMA write latency", LatencyOf(r.Results))
	})
	if len(s.Charts) == 0 && len(r.Results) > 0 {
		s.addChart("RDMA write latency percentiles", func(w io.Writer) error {
			return plot.LatencyPercentiles(w, "erdmakit bw lat: RDMA write latency", LatencyOf(r.Results))
		})
	}
	return fs, nil
}

func perftestRuns(s *section, runs []perftest.Run, latency bool) []finding {
	head := []string{"device", "port", "attempts", "bytes", "avg Gbit/s", "peak Gbit/s", "error"}
	if latency {
		head = []string{"device", "port", "attempts", "bytes", "typical µs", "avg µs", "max µs", "error"}
	}
	t := table{Caption: "perftest pairs (the client's side)", Head: head}
	var fs []finding
	for _, r := range runs {
		cells := []string{r.Device, fmt.Sprint(r.Port), fmt.Sprint(r.Attempts)}
		switch {
		case r.Client != nil && latency && len(r.Client.Latency) > 0:
			l := r.Client.Latency[len(r.Client.Latency)-1]
			cells = append(cells, fmt.Sprint(l.Bytes), fmt.Sprintf("%.2f", l.TypicalUS), fmt.Sprintf("%.2f", l.AvgUS), fmt.Sprintf("%.2f", l.MaxUS))
		case r.Client != nil && !latency && len(r.Client.Results) > 0:
			x := r.Client.Results[len(r.Client.Results)-1]
			cells = append(cells, fmt.Sprint(x.Bytes), fmt.Sprintf("%.2f", x.BWAvgGbps), fmt.Sprintf("%.2f", x.BWPeakGbps))
		default:
			cells = append(cells, "", "", "")
			if latency {
				cells = append(cells, "")
			}
		}
		st := health.OK
		errText := r.Error
		if errText == "" && r.Client != nil && len(r.Client.Errors) > 0 {
			errText = strings.Join(r.Client.Errors, "; ")
		}
		if errText != "" {
			st = health.Fail
			f := finding{ID: "perftest-error", Severity: health.Fail, Summary: r.Device + ": " + errText}
			if r.Client != nil {
				f.Evidence = r.Client.Errors
			}
			fs = append(fs, f)
		}
		t.Rows = append(t.Rows, row{Status: st, Cells: append(cells, errText)})
	}
	s.Tables = append(s.Tables, t)
	return fs
}

func perftestSection(s *section, r *perftest.Summary) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"total", fmt.Sprintf("%.2f Gbit/s", r.TotalGbps)})
	if r.ExpectGbps > 0 {
		s.Facts = append(s.Facts, [2]string{"expected", fmt.Sprintf("%.1f Gbit/s", r.ExpectGbps)})
	}
	fs := perftestRuns(s, r.Runs, false)
	if r.Status == health.Warn {
		fs = append(fs, finding{ID: "perftest-below-expectation", Severity: health.Warn,
			Summary: fmt.Sprintf("%.2f Gbit/s in total, below the expected %.1f", r.TotalGbps, r.ExpectGbps)})
	}
	s.addChart("ib_write_bw against message size", func(w io.Writer) error {
		return plot.Sweep(w, "erdmakit perftest: ib_write_bw", perftestSweep(r.Runs))
	})
	return fs, nil
}

func perftestLatSection(s *section, r *perftest.LatencySummary) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"median", fmt.Sprintf("%.2f µs", r.MedianUS)})
	if r.ExpectUS > 0 {
		s.Facts = append(s.Facts, [2]string{"expected", fmt.Sprintf("at most %.2f µs", r.ExpectUS)})
	}
	fs := perftestRuns(s, r.Runs, true)
	if r.Status == health.Warn {
		fs = append(fs, finding{ID: "perftest-lat-above-expectation", Severity: health.Warn,
			Summary: fmt.Sprintf("median %.2f µs, above the expected %.2f", r.MedianUS, r.ExpectUS)})
	}
	return fs, nil
}

// testsTable and testsChart show an nccl-tests result.
func testsTable(s *section, r *ncclog.TestResult) {
	if r.Collective != "" {
		s.Facts = append(s.Facts, [2]string{"collective", r.Collective})
	}
	s.Facts = append(s.Facts, [2]string{"ranks", fmt.Sprintf("%d on %d host(s)", r.Ranks, r.Hosts)},
		[2]string{"average bus bandwidth", fmt.Sprintf("%.2f GB/s", r.AvgBusBW)})
	if r.Version != "" {
		s.Facts = append(s.Facts, [2]string{"nccl-tests", r.Version})
	}
	if len(r.Rows) > 0 {
		t := table{Caption: "nccl-tests rows", Head: []string{"size", "count", "type", "redop", "time µs", "algbw GB/s", "busbw GB/s", "#wrong", "in-place busbw GB/s"}}
		for _, x := range r.Rows {
			wrong := "N/A"
			if x.OutOfPlace.Wrong.Known {
				wrong = fmt.Sprint(x.OutOfPlace.Wrong.N)
			}
			st := health.Severity("")
			if x.OutOfPlace.Wrong.Known && x.OutOfPlace.Wrong.N > 0 {
				st = health.Fail
			}
			t.Rows = append(t.Rows, row{Status: st, Cells: []string{units.Format(x.Size, units.Compact), fmt.Sprint(x.Count), x.Type, x.Redop,
				fmt.Sprintf("%.1f", x.OutOfPlace.TimeUS), fmt.Sprintf("%.2f", x.OutOfPlace.AlgBWGB), fmt.Sprintf("%.2f", x.OutOfPlace.BusBWGB), wrong,
				fmt.Sprintf("%.2f", x.InPlace.BusBWGB)}})
		}
		s.Tables = append(s.Tables, t)
	}
	if r.NCCL != nil {
		ncclUse(s, r.NCCL)
	}
}

// gdrText says what the log says of GPUDirect RDMA: the HCAs NCCL named
// enabled or disabled (only those it named) and the channels over GDRDMA.
func gdrText(l *ncclog.Summary) string {
	var parts []string
	if len(l.GDR.Enabled) > 0 {
		parts = append(parts, "enabled on "+strings.Join(l.GDR.Enabled, ", "))
	}
	if len(l.GDR.Disabled) > 0 {
		parts = append(parts, "disabled on "+strings.Join(l.GDR.Disabled, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "the log names no HCA's GPU Direct RDMA state")
	}
	parts = append(parts, fmt.Sprintf("%d channel(s) over GDRDMA", l.GDRDMAChannels))
	return strings.Join(parts, "; ")
}

// balanceText says what NCCL's spread over the NET/IB devices means.
func balanceText(b ncclog.NICBalance) string {
	switch b {
	case ncclog.NICsOne:
		return "one NET/IB device listed: nothing to spread"
	case ncclog.NICsBalanced:
		return "balanced: every NET/IB device listed carried channels, the least at least half the most"
	case ncclog.NICsUnbalanced:
		return "unbalanced: every NET/IB device listed carried channels, unevenly"
	case ncclog.NICsFirstOnly:
		return "some NET/IB devices carried no channel (NCCL put every GPU on the first NIC)"
	case ncclog.NICsUnknown, "":
		return "unknown: the log has no NET/IB channel lines to count"
	}
	return string(b)
}

// collectiveOf is the collective an nccl-tests command runs, from its
// binary's name (all_reduce_perf: all_reduce); "" when it names none.
func collectiveOf(argv []string) string {
	for _, a := range argv {
		base := filepath.Base(a)
		if c, ok := strings.CutSuffix(base, "_perf"); ok && c != "" {
			return c
		}
	}
	return ""
}

func testsChart(s *section, r *ncclog.TestResult, expect float64) {
	title := r.Collective
	if title == "" {
		title = "nccl-tests"
	}
	if r.Ranks > 0 {
		title += fmt.Sprintf(", %d ranks on %d hosts", r.Ranks, r.Hosts)
	}
	s.addChart("bus bandwidth against message size", func(w io.Writer) error { return plot.BusBW(w, r, title, expect) })
}

func ncclRunSection(s *section, r *nccl.RunReport) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"command", strings.Join(r.Argv, " ")},
		[2]string{"launcher exit code", fmt.Sprint(r.LauncherExitCode)},
		[2]string{"duration", fmt.Sprintf("%.1f s", r.DurationS)})
	if r.ExpectBusBWGBs > 0 {
		s.Facts = append(s.Facts, [2]string{"expected bus bandwidth", fmt.Sprintf("%.1f GB/s", r.ExpectBusBWGBs)})
	}
	if r.Cancelled {
		s.Facts = append(s.Facts, [2]string{"interrupted", "yes"})
	}
	res := r.TestResult
	if res == nil {
		res = &ncclog.TestResult{}
	}
	if res.Collective == "" {
		// The log named none (its header was cut): the command did.
		if c := collectiveOf(r.Argv); c != "" {
			cp := *res
			cp.Collective = c
			res = &cp
		}
	}
	testsTable(s, res)
	testsChart(s, res, r.ExpectBusBWGBs)
	if res.NCCL != nil {
		ncclChart(s, res.NCCL)
	}
	return findingsOf("", r.Findings), nil
}

func ncclTestsSection(s *section, r *ncclog.TestResult) ([]finding, []hostRow) {
	fs := nccl.Diagnose(r, nccl.Expectation{})
	s.Status = health.Status(fs)
	testsTable(s, r)
	testsChart(s, r, 0)
	if r.NCCL != nil {
		ncclChart(s, r.NCCL)
	}
	return findingsOf("", fs), nil
}

// ncclUse is the table of what NCCL used: the network, GPUDirect RDMA and
// the channels per NIC.
func ncclUse(s *section, l *ncclog.Summary) {
	s.Facts = append(s.Facts, [2]string{"NCCL", orNone(l.NCCLVersion)},
		[2]string{"NCCL network", fmt.Sprintf("%s (%s)", orNone(l.Network), l.Transport)},
		[2]string{"GPUDirect RDMA", gdrText(l)},
		[2]string{"NIC balance", balanceText(l.NICSpread)})
	if len(l.NICs) > 0 {
		t := table{Caption: "NCCL's use of each NET/IB device", Head: []string{"index", "device", "channels", "over GDRDMA"}}
		for _, n := range l.NICs {
			t.Rows = append(t.Rows, row{Cells: []string{fmt.Sprint(n.Index), n.Name, fmt.Sprint(n.Channels), fmt.Sprint(n.GDRDMAChannels)}})
		}
		s.Tables = append(s.Tables, t)
	}
	if len(l.Channels) > 0 {
		t := table{Caption: "channels per transport", Head: []string{"transport", "channels"}}
		keys := make([]string, 0, len(l.Channels))
		for k := range l.Channels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Rows = append(t.Rows, row{Cells: []string{k, fmt.Sprint(l.Channels[k])}})
		}
		s.Tables = append(s.Tables, t)
	}
}

func ncclChart(s *section, l *ncclog.Summary) {
	s.addChart("NCCL transports and NICs", func(w io.Writer) error { return plot.NCCLUse(w, "NCCL channels: transports and NICs", l) })
}

func ncclLogSection(s *section, l *ncclog.Summary) ([]finding, []hostRow) {
	fs := ncclog.Diagnose(l)
	s.Status = health.Status(fs)
	ncclUse(s, l)
	ncclChart(s, l)
	return findingsOf("", fs), nil
}

func perftestLogSection(s *section, r *perftest.Report) ([]finding, []hostRow) {
	s.Status = health.OK
	if !r.OK() {
		s.Status = health.Fail
	}
	s.Facts = append(s.Facts, [2]string{"test", r.Test}, [2]string{"device", r.Device}, [2]string{"QPs", fmt.Sprint(r.QPs)},
		[2]string{"transport", r.Transport}, [2]string{"link type", r.LinkType})
	if len(r.Results) > 0 {
		t := table{Caption: "results", Head: []string{"bytes", "iterations", "avg Gbit/s", "peak Gbit/s", "Mpps"}}
		for _, x := range r.Results {
			t.Rows = append(t.Rows, row{Cells: []string{fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), fmt.Sprintf("%.2f", x.BWAvgGbps), fmt.Sprintf("%.2f", x.BWPeakGbps), fmt.Sprintf("%.3f", x.MsgRateMpps)}})
		}
		s.Tables = append(s.Tables, t)
	}
	if len(r.Latency) > 0 {
		t := table{Caption: "latency", Head: []string{"bytes", "iterations", "min µs", "typical µs", "avg µs", "max µs"}}
		for _, x := range r.Latency {
			t.Rows = append(t.Rows, row{Cells: []string{fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), fmt.Sprintf("%.2f", x.MinUS), fmt.Sprintf("%.2f", x.TypicalUS), fmt.Sprintf("%.2f", x.AvgUS), fmt.Sprintf("%.2f", x.MaxUS)}})
		}
		s.Tables = append(s.Tables, t)
	}
	var fs []finding
	if len(r.Errors) > 0 {
		fs = append(fs, finding{ID: "perftest-error", Severity: health.Fail, Summary: r.Errors[0], Evidence: r.Errors})
	} else if s.Status == health.Fail {
		fs = append(fs, finding{ID: "perftest-no-result", Severity: health.Fail, Summary: "the log shows no result row"})
	}
	s.addChart("ib_write_bw against message size", func(w io.Writer) error {
		return plot.Sweep(w, r.Test, perftestSweep([]perftest.Run{{Device: r.Device, Client: r}}))
	})
	return fs, nil
}

func topoSection(s *section, m *smitopo.Matrix) ([]finding, []hostRow) {
	s.Status = health.OK
	s.Facts = append(s.Facts, [2]string{"source", m.Source})
	head := []string{""}
	for _, e := range m.Endpoints {
		head = append(head, e.Label)
	}
	t := table{Caption: "GPU and NIC topology (nvidia-smi topo -m)", Head: append(head, "name")}
	for i, e := range m.Endpoints {
		cells := []string{e.Label}
		for j := range m.Endpoints {
			v := ""
			if i < len(m.Links) && j < len(m.Links[i]) {
				v = string(m.Links[i][j])
			}
			cells = append(cells, v)
		}
		t.Rows = append(t.Rows, row{Cells: append(cells, e.Name)})
	}
	s.Tables = append(s.Tables, t)
	return nil, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// proveSection shows fleet prove's proof: the stages, the culprits with
// their fix, each host's doctor findings, and the stages' own reports
// (their tables and charts; their findings are the culprits already).
func proveSection(s *section, r *fleet.Proof) ([]finding, []hostRow) {
	s.Status = r.Status
	s.Facts = append(s.Facts, [2]string{"verdict", string(r.Verdict)}, [2]string{"hosts", fmt.Sprint(r.Size)},
		[2]string{"authenticated ranks", yesNo(r.Authenticated)}, [2]string{"duration", fmt.Sprintf("%.1f s", r.Seconds)})
	if r.Interrupted {
		s.Facts = append(s.Facts, [2]string{"interrupted", "yes: the verdict is what the run reached"})
	}
	st := table{Caption: "stages", Head: []string{"stage", "status", "summary", "seconds"}}
	for _, x := range r.Stages {
		shown := stageStatus(r, x)
		st.Rows = append(st.Rows, row{Status: shown, Cells: []string{x.Name, string(shown), x.Summary, fmt.Sprintf("%.1f", x.Seconds)}})
	}
	s.Tables = append(s.Tables, st)
	var fs []finding
	if len(r.Culprits) > 0 {
		ct := table{Caption: "culprits and the first thing to fix", Head: []string{"kind", "severity", "hosts", "stages", "reason", "fix", "fix from"}}
		for _, c := range r.Culprits {
			ct.Rows = append(ct.Rows, row{Status: c.Severity, Cells: []string{c.Kind, string(c.Severity), pair(c.Hosts),
				strings.Join(c.Stages, ", "), c.Reason, c.Fix, c.FixFrom}})
			// A culprit the doctor explains is among its host's findings;
			// the others (the mesh's, NCCL's, whatever finding of NCCL's
			// diagnosis their fix comes from) are findings of their own.
			if !explainedByDoctor(r, c) {
				fs = append(fs, finding{Host: pair(c.Hosts), ID: "prove-" + c.Kind, Severity: c.Severity,
					Summary: c.Reason, Evidence: c.Evidence, Remediation: c.Fix})
			}
		}
		s.Tables = append(s.Tables, ct)
	}
	var hs []hostRow
	for _, h := range r.Hosts {
		hfs := findingsOf(h.Host, h.Findings)
		for i := range hfs {
			hfs[i].doctor = true
		}
		fs = append(fs, hfs...)
		hr := hostOf(hfs, h.Host, h.Status)
		hr.doctor = true
		if h.Mesh != "" && h.Mesh != "ok" {
			hr.Problems = append(hr.Problems, "mesh: "+h.Mesh)
		}
		hs = append(hs, hr)
	}
	fs = append(fs, failures("prove-error", r.Errors)...)
	// The stages' own reports: their tables and charts.
	sub := func(name string, v any) {
		ss := &section{}
		buildSection(ss, Input{value: v})
		for _, t := range ss.Tables {
			t.Caption = name + ": " + t.Caption
			s.Tables = append(s.Tables, t)
		}
		for _, c := range ss.Charts {
			c.Title = name + ": " + c.Title
			s.Charts = append(s.Charts, c)
		}
		for _, f := range ss.Facts {
			s.Facts = append(s.Facts, [2]string{name + " " + f[0], f[1]})
		}
		s.Notes = append(s.Notes, ss.Notes...)
	}
	if r.Doctor != nil {
		sub("doctor", r.Doctor)
	}
	if r.Mesh != nil {
		sub("mesh", r.Mesh)
	}
	if r.NCCL != nil {
		sub("nccl", r.NCCL)
	}
	return fs, hs
}

// docTitle is the page's title with its verdict, unless the title says it
// already ("erdmakit fleet prove: broken (4 ranks)").
func docTitle(p *page) string {
	v := string(p.Verdict)
	if v == "" {
		v = strings.ToUpper(string(p.Status))
	}
	if strings.Contains(strings.ToLower(p.Title), strings.ToLower(v)) {
		return p.Title
	}
	return p.Title + ": " + v
}

// explainedByDoctor reports whether culprit c is one host's doctor
// finding, listed with that host's findings.
func explainedByDoctor(r *fleet.Proof, c fleet.Culprit) bool {
	if c.Kind != fleet.CulpritHost || len(c.Hosts) != 1 || c.FixFrom == "" {
		return false
	}
	for _, h := range r.Hosts {
		if h.Host != c.Hosts[0] {
			continue
		}
		for _, f := range h.Findings {
			if f.ID == c.FixFrom {
				return true
			}
		}
	}
	return false
}

package fleet

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// HostReport is one rank's doctor result, sent to rank 0.
type HostReport struct {
	Rank   int           `json:"rank"`
	Host   string        `json:"host"`
	Report *erdma.Report `json:"report,omitempty"`
	Error  string        `json:"error,omitempty"` // the doctor could not run there
	// NoMesh says why this host cannot take part in a mesh (fleet prove:
	// no RDMA device); "" when it can.
	NoMesh string `json:"no_mesh,omitempty"`
}

// FleetReport is what `erdmakit fleet doctor` prints: the public schema of
// its --json output.
type FleetReport struct {
	Status health.Severity `json:"status"` // worst over all hosts; fail when a host is missing
	Size   int             `json:"size"`
	Hosts  []HostSummary   `json:"hosts"` // by rank
	// ByStatus lists host names per host state (ok, warn, fail, and
	// Missing, Errored, NotReached).
	ByStatus map[HostState][]string `json:"by_status"`
	// Differences are the checks whose result is not the same on every host,
	// the rarest result first: a single host missing nvidia_peermem stands out.
	Differences []Difference `json:"differences"`
	Errors      []string     `json:"errors"` // rendezvous problems
	// Authenticated: the ranks proved they hold ERDMAKIT_FLEET_SECRET
	// (Options.Authenticated). false: any process that can reach rank 0
	// could have posed as a rank.
	Authenticated bool `json:"authenticated"`
	// Interrupted: the run was cancelled (SIGINT/SIGTERM); hosts it never
	// heard from are "not reached", which says nothing about their health
	// and does not change Status.
	Interrupted bool `json:"interrupted,omitempty"`
}

// markNotReached adds ranks an interrupted run never heard from.
func (fr *FleetReport) markNotReached(ranks []int) {
	fr.Interrupted = true
	for _, r := range ranks {
		fr.add(HostSummary{Rank: r, Host: fmt.Sprintf("rank %d", r), Status: NotReached, Error: "interrupted before it answered", Problems: []string{}})
	}
	fr.sortHosts()
}

// add lists host h, its state counting for the fleet's status as
// HostState.Severity says (a host not reached does not change it).
func (fr *FleetReport) add(h HostSummary) {
	fr.Status = health.Worst(fr.Status, h.Status.Severity())
	fr.Hosts = append(fr.Hosts, h)
	fr.ByStatus[h.Status] = append(fr.ByStatus[h.Status], h.Host)
}

func (fr *FleetReport) sortHosts() {
	sort.Slice(fr.Hosts, func(i, j int) bool { return fr.Hosts[i].Rank < fr.Hosts[j].Rank })
}

// HostSummary is one host's line in the fleet report.
type HostSummary struct {
	Rank   int       `json:"rank"`
	Host   string    `json:"host"`
	Status HostState `json:"status"` // ok|warn|fail, or Missing, Errored, NotReached
	Error  string    `json:"error,omitempty"`
	// Problems are the ids of this host's warn and fail findings ([] when
	// none, or when the host sent no report).
	Problems []string `json:"problems"`
}

// Difference is one check whose severity differs between hosts.
type Difference struct {
	ID string `json:"id"`
	// Groups are the hosts per severity, the smallest group first.
	Groups []SeverityGroup `json:"groups"`
}

// SeverityGroup is the hosts where a check had one severity, with the
// summary one of them gave (they are usually alike).
type SeverityGroup struct {
	Severity health.Severity `json:"severity"`
	Hosts    []string        `json:"hosts"`
	Summary  string          `json:"summary"`
}

// Aggregate builds the fleet report from every rank's report; ranks in
// missing never answered.
func Aggregate(size int, reports []HostReport, missing []int) *FleetReport {
	// Lists are [] when empty (jq '.differences[]' on agreeing hosts).
	fr := &FleetReport{Status: health.OK, Size: size, ByStatus: map[HostState][]string{},
		Hosts: []HostSummary{}, Differences: []Difference{}, Errors: []string{}}
	sort.Slice(reports, func(i, j int) bool { return reports[i].Rank < reports[j].Rank })
	uniqueReportNames(reports)
	checks := checkTable{byCheck: map[string]map[string]checkCell{}}
	reporting := 0
	for _, r := range reports {
		hs := HostSummary{Rank: r.Rank, Host: r.Host, Status: Errored, Error: r.Error, Problems: []string{}}
		switch {
		case r.Error != "":
		case r.Report == nil:
			hs.Error = "no report"
		case !StateOf(r.Report.Status).Reported() && r.Report.Status != "":
			// A word that is no severity ("missing") would pass for the
			// fleet's own; the host's doctor said nothing we can read.
			hs.Error = fmt.Sprintf("its doctor's status %q is not a severity", r.Report.Status)
		default:
			hs.Status, hs.Problems = StateOf(r.Report.Status), checks.add(r.Host, r.Report)
			reporting++
		}
		fr.add(hs)
	}
	for _, m := range missing {
		fr.add(HostSummary{Rank: m, Host: fmt.Sprintf("rank %d", m), Status: Missing, Error: "did not report in time", Problems: []string{}})
	}
	fr.sortHosts()
	fr.Differences = append(fr.Differences, differences(checks.byCheck, checks.order, reporting)...)
	return fr
}

// uniqueReportNames suffixes the host names several ranks share with
// their ranks (uniqueNames).
func uniqueReportNames(reports []HostReport) {
	names := make([]string, len(reports))
	ranks := make([]int, len(reports))
	for i, r := range reports {
		names[i], ranks[i] = r.Host, r.Rank
	}
	uniqueNames(names, ranks)
	for i := range reports {
		reports[i].Host = names[i]
	}
}

// checkTable is every check's result per host, the checks in the order
// first seen.
type checkTable struct {
	byCheck map[string]map[string]checkCell // id -> host -> result
	order   []string
}

// add records the findings of host's report and returns the ids of its
// warn and fail findings ([] when none).
func (t *checkTable) add(host string, rep *erdma.Report) []string {
	problems := []string{}
	for _, f := range rep.Findings {
		if t.byCheck[f.ID] == nil {
			t.byCheck[f.ID] = map[string]checkCell{}
			t.order = append(t.order, f.ID)
		}
		t.byCheck[f.ID][host] = checkCell{f.Severity, f.Summary}
		if f.Severity == health.Warn || f.Severity == health.Fail {
			problems = append(problems, f.ID)
		}
	}
	return problems
}

// checkCell is one host's result of one check.
type checkCell struct {
	sev     health.Severity
	summary string
}

// differences are the checks (in order) whose result is not the same on
// every one of the reporting hosts, hosts grouped by result, smallest
// group first.
func differences(byCheck map[string]map[string]checkCell, order []string, reporting int) []Difference {
	var out []Difference
	for _, id := range order {
		hosts := byCheck[id]
		groups := map[health.Severity]*SeverityGroup{}
		for h, c := range hosts {
			g := groups[c.sev]
			if g == nil {
				g = &SeverityGroup{Severity: c.sev, Summary: c.summary}
				groups[c.sev] = g
			}
			g.Hosts = append(g.Hosts, h)
		}
		// A check some hosts did not run at all also differs.
		if len(groups) == 1 && len(hosts) == reporting {
			continue
		}
		d := Difference{ID: id}
		for _, g := range groups {
			sort.Strings(g.Hosts)
			d.Groups = append(d.Groups, *g)
		}
		sort.Slice(d.Groups, func(i, j int) bool {
			if len(d.Groups[i].Hosts) != len(d.Groups[j].Hosts) {
				return len(d.Groups[i].Hosts) < len(d.Groups[j].Hosts)
			}
			return d.Groups[i].Severity < d.Groups[j].Severity
		})
		out = append(out, d)
	}
	return out
}

// localReport is this rank's HostReport: its doctor's report, or why there
// is none.
func localReport(ctx context.Context, rank int, host string, doctor DoctorFunc) HostReport {
	hr := HostReport{Rank: rank, Host: host}
	if doctor == nil {
		hr.Error = "no doctor given"
		return hr
	}
	rep, err := doctor(ctx)
	if err != nil {
		hr.Error = err.Error()
	}
	hr.Report = rep
	return hr
}

// DoctorFunc runs the doctor on the local host.
type DoctorFunc func(ctx context.Context) (*erdma.Report, error)

// Options bound the fleet's waits.
type Options struct {
	// Join is how long ranks wait to meet (rank 0 for all, others to reach
	// rank 0). A host that has not joined by then is reported missing.
	Join time.Duration
	// Message bounds every exchange after joining; a rank silent for longer
	// is reported as hung.
	Message  time.Duration
	Hostname string
	Version  string
	// Secret keys the ranks' sessions: JobSecret(os.Getenv) in a launcher
	// job; nil is an empty key (sessions are checked for integrity, but
	// anyone may join).
	Secret []byte
	// Authenticated says that Secret is a secret (JobSecret's source is
	// SecretEnv), not derived from launcher values other users can read; the
	// reports say so.
	Authenticated bool
}

func (o Options) withDefaults() Options {
	if o.Join <= 0 {
		o.Join = 60 * time.Second
	}
	if o.Message <= 0 {
		o.Message = 120 * time.Second
	}
	return o
}

// RunDoctor runs the doctor on every rank and gathers the reports at rank 0,
// which returns the fleet report; other ranks return nil after sending
// theirs. addr is the rendezvous address; rank 0 listens on its port.
func RunDoctor(ctx context.Context, me Rank, addr string, doctor DoctorFunc, opt Options) (*FleetReport, error) {
	opt = opt.withDefaults()
	local := func() HostReport { return localReport(ctx, me.Rank, opt.Hostname, doctor) }
	if me.Rank != 0 {
		conn, err := joinJob(ctx, me, addr, opt)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if err := conn.Send(ctx, msgReport, local()); err != nil {
			return nil, err
		}
		var bye struct{}
		_ = conn.Recv(ctx, msgBye, &bye, 0) // rank 0 may already be gone: nothing left to do
		return nil, nil
	}

	mine := startLocal(local)
	g, err := gatherJob(ctx, me, addr, opt)
	if err != nil {
		return nil, err
	}
	defer g.Close()

	fr, _, _ := collectReports(ctx, g, me.Size, mine, opt.Authenticated,
		func(_ int, m *member, _ int) { _ = m.Conn.Send(ctx, msgBye, struct{}{}) })
	return fr, nil
}

// startLocal runs rank 0's own doctor (local) while the others join; the
// function it returns waits for that report (and may be called again).
func startLocal(local func() HostReport) func() HostReport {
	done := make(chan HostReport, 1)
	go func() { done <- local() }()
	return sync.OnceValue(func() HostReport { return <-done })
}

// collectReports receives every member's doctor report, adds rank 0's own
// (waitMine returns it once the local run ends) and aggregates them; a
// collection cut short by ctx marks whom it did not reach (interrupted).
// got, when set, runs under the collection's lock for each report received,
// with the number received so far. fleet doctor and fleet prove share it.
func collectReports(ctx context.Context, g *gathering, size int, waitMine func() HostReport, authenticated bool,
	got func(rank int, m *member, received int)) (fr *FleetReport, reports []HostReport, interrupted bool) {
	reports = make([]HostReport, 0, size)
	var mu sync.Mutex
	var wg sync.WaitGroup
	missing := append([]int(nil), g.Missing...)
	var notReached []int
	for rank, m := range g.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var hr HostReport
			err := m.Conn.Recv(ctx, msgReport, &hr, 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ctx.Err() != nil {
					notReached = append(notReached, rank)
					return
				}
				reports = append(reports, HostReport{Rank: rank, Host: m.Host, Error: "no report: " + err.Error()})
				return
			}
			hr.Rank, hr.Host = rank, m.Host // trust the hello, not the payload
			reports = append(reports, hr)
			if got != nil {
				got(rank, m, len(reports))
			}
		}()
	}
	wg.Wait()
	reports = append(reports, waitMine())
	interrupted = ctx.Err() != nil
	if interrupted {
		notReached, missing = append(notReached, missing...), nil
	}
	fr = Aggregate(size, reports, missing)
	if interrupted {
		fr.markNotReached(notReached)
	}
	fr.Errors = append(fr.Errors, g.Errors...) // [] when none, never null
	fr.Authenticated = authenticated
	return fr, reports, interrupted
}

// listen opens the rendezvous port of addr on every interface.
func listen(addr string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fleet: rendezvous address %q: %w", addr, err)
	}
	host := ""
	if h, _, _ := net.SplitHostPort(addr); strings.HasPrefix(h, "127.") || h == "localhost" {
		host = h // a loopback rendezvous (tests, one host) stays on loopback
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("fleet: rank 0 cannot listen on port %s: %w", port, err)
	}
	return l, nil
}

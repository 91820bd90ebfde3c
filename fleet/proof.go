package fleet

import (
	"fmt"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
)

// Verdict is fleet prove's one answer for the whole cluster.
type Verdict string

const (
	// Proven: every stage that ran passed (a stage skipped for a missing
	// tool, e.g. nccl-tests, is listed as skipped and does not change it).
	Proven Verdict = "proven"
	// Degraded: something is below expectation (a doctor warning, a mesh
	// outlier that did not repeat, NCCL bus bandwidth below the
	// expectation); exit 1.
	Degraded Verdict = "degraded"
	// Broken: a host, a link or NCCL failed; exit 2.
	Broken Verdict = "broken"
	// Incomplete: the run was interrupted before anything wrong was found;
	// exit 3. (An interrupted run that already found a fault says degraded
	// or broken, and still exits 3.)
	Incomplete Verdict = "incomplete"
)

// Order ranks verdicts from the best: none (or one this version does not
// know) 0, proven 1, incomplete 2, degraded 3, broken 4.
func (v Verdict) Order() int {
	switch v {
	case Proven:
		return 1
	case Incomplete:
		return 2
	case Degraded:
		return 3
	case Broken:
		return 4
	}
	return 0
}

// WorseVerdict is the worse of a and b by Order; a when they rank alike.
func WorseVerdict(a, b Verdict) Verdict {
	if b.Order() > a.Order() {
		return b
	}
	return a
}

// Stage names, in the order fleet prove runs them.
const (
	StageDoctor = "doctor"
	StageMesh   = "mesh"
	StageNCCL   = "nccl"
)

// StageNotReached is the status of a stage an interrupted run never began:
// NotReached, as of a host the run never heard from.
const StageNotReached = NotReached

// Stage is one step of the pipeline and how it ended.
type Stage struct {
	Name string `json:"name"` // StageDoctor, StageMesh, StageNCCL
	// Status: ok, warn, fail; skip when it could not run (the summary says
	// why: no RDMA device, no nccl-tests); StageNotReached when an
	// interrupted run never began it. A HostState, as a host's: the stages'
	// severities count for the verdict, not reached does not.
	Status  HostState `json:"status"`
	Summary string    `json:"summary"`
	Seconds float64   `json:"seconds"`
}

// ProofHost is one host's line in the proof.
type ProofHost struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	// Status is the worst of its doctor status and what the mesh said of
	// it: ok, warn, fail, or Missing, Errored, NotReached.
	Status HostState `json:"status"`
	Doctor HostState `json:"doctor"` // the doctor's status (or Missing, Errored, NotReached)
	// Mesh: "ok", "bad host", "dead", "bad link" (one of its links),
	// "no rdma device" (it could not take part: see MeshNote), "not tested".
	Mesh     string `json:"mesh"`
	MeshNote string `json:"mesh_note,omitempty"`
	// Findings are its doctor's warn and fail findings, fail first, with
	// evidence and remediation ([] when none or no report).
	Findings []health.Finding `json:"findings"`
}

// Proof is the public schema of `erdmakit fleet prove --json`: the one
// verdict for a cluster, the culprits with their fixes, and the stages'
// own reports.
type Proof struct {
	Verdict Verdict `json:"verdict"`
	// Status is Verdict as a severity: ok, warn, fail (exit 0, 1, 2).
	Status health.Severity `json:"status"`
	Size   int             `json:"size"` // ranks in the job
	// Culprits: fail first, then by stage and rank ([] when proven).
	Culprits []Culprit   `json:"culprits"`
	Stages   []Stage     `json:"stages"` // always the three, in order
	Hosts    []ProofHost `json:"hosts"`  // by rank
	// Doctor is fleet doctor's report; null only when the run was
	// interrupted before it.
	Doctor *FleetReport `json:"doctor"`
	// Mesh is bw mesh's report; null when the stage did not run.
	Mesh *MeshReport `json:"mesh"`
	// NCCL is nccl run's report; null when skipped or not reached.
	NCCL *nccl.RunReport `json:"nccl"`
	// Errors are rendezvous problems and stages that could not start.
	Errors        []string `json:"errors"`
	Authenticated bool     `json:"authenticated"`
	Interrupted   bool     `json:"interrupted"`
	Seconds       float64  `json:"seconds"`
}

// Exit is the process exit code of the proof: 0 proven, 1 degraded,
// 2 broken, 3 interrupted (whatever it had found).
func (p *Proof) Exit() int {
	if p.Interrupted {
		return 3
	}
	return p.Status.Exit()
}

// Judgement is what Judge weighs: the stages' reports as they came back.
type Judgement struct {
	Size int
	// Doctor is the fleet doctor's report; Reports are the hosts' own
	// doctor reports (for the findings and their remediation).
	Doctor  *FleetReport
	Reports []HostReport
	// NoMesh: ranks that could not take part in the mesh, and why (no RDMA
	// device).
	NoMesh map[int]string
	Mesh   *MeshReport
	NCCL   *nccl.RunReport
	// Stages as run (Judge completes the missing ones as not reached or
	// skipped).
	Stages        []Stage
	Errors        []string
	Authenticated bool
	Interrupted   bool
	Seconds       float64
}

// Judge turns the stages' reports into the proof: the verdict, the
// culprits each with the first thing to fix, every host's line. It is
// the one place that decides the verdict (Prove calls it at rank 0).
func Judge(j Judgement) *Proof {
	p := &Proof{Size: j.Size, Doctor: j.Doctor, Mesh: j.Mesh, NCCL: j.NCCL,
		Culprits: []Culprit{}, Hosts: []ProofHost{}, Errors: []string{},
		Authenticated: j.Authenticated, Interrupted: j.Interrupted, Seconds: j.Seconds}
	p.Errors = append(p.Errors, j.Errors...)
	p.Stages = completeStages(j.Stages, j.Interrupted)
	jd := newJudging(j)
	jd.doctor()
	jd.noMesh()
	jd.mesh()
	jd.nccl()
	jd.finish(p)
	return p
}

// judging is Judge's state: the hosts by launcher rank and the culprits,
// filled by one method per source (doctor, mesh, NCCL).
type judging struct {
	j        Judgement
	reports  map[int]*HostReport
	hosts    map[int]*ProofHost
	order    []int
	culprits []*Culprit
	byHost   map[int]*Culprit
}

func newJudging(j Judgement) *judging {
	jd := &judging{j: j, reports: map[int]*HostReport{}, hosts: map[int]*ProofHost{}, byHost: map[int]*Culprit{}}
	for i := range j.Reports {
		jd.reports[j.Reports[i].Rank] = &j.Reports[i]
	}
	if j.Doctor != nil {
		for _, h := range j.Doctor.Hosts {
			ph := &ProofHost{Rank: h.Rank, Host: h.Host, Status: h.Status, Doctor: h.Status, Mesh: "not tested", Findings: problemFindings(jd.reports[h.Rank])}
			if why, ok := j.NoMesh[h.Rank]; ok {
				ph.Mesh, ph.MeshNote = "no rdma device", why
			}
			jd.hosts[h.Rank] = ph
			jd.order = append(jd.order, h.Rank)
		}
	}
	return jd
}

// add records c, as the culprit of host rank when rank >= 0.
func (jd *judging) add(c *Culprit, rank int) {
	if rank >= 0 {
		jd.byHost[rank] = c
	}
	jd.culprits = append(jd.culprits, c)
}

// doctor: every host not ok is a culprit, its first failing finding the
// first thing to fix.
func (jd *judging) doctor() {
	if jd.j.Doctor == nil {
		return
	}
	for _, h := range jd.j.Doctor.Hosts {
		if h.Status == HostOK || h.Status == NotReached {
			continue
		}
		c := newCulprit(CulpritHost, hostSeverity(h.Status.Severity()), StageDoctor, "").on([]string{h.Host}, []int{h.Rank})
		if f, ok := firstFix(jd.reports[h.Rank]); ok {
			c.Reason = fmt.Sprintf("doctor: %s: %s", f.ID, f.Summary)
			c.Evidence = append(c.Evidence, boundedEvidence(f.Evidence, 3)...)
			if others := len(jd.hosts[h.Rank].Findings) - 1; others > 0 {
				c.Evidence = append(c.Evidence, fmt.Sprintf("and %d more problem(s): %s", others, strings.Join(h.Problems[min(1, len(h.Problems)):], ", ")))
			}
			c.Fix, c.FixFrom = f.Step(), f.ID
		} else {
			c.Reason = fmt.Sprintf("doctor: %s: %s", h.Status, h.Error)
			c.Fix, c.FixFrom = hostErrorFix(h), StageDoctor
		}
		if c.Fix == "" {
			c.Fix, c.FixFrom = "see the finding's evidence: "+strings.Join(h.Problems, ", "), StageDoctor
		}
		jd.add(c, h.Rank)
	}
}

// noMesh: a host that could not take part in the mesh (no RDMA device) is
// not proven: a culprit, with its doctor's fix when the doctor saw why.
func (jd *judging) noMesh() {
	var ranks []int
	for r := range jd.j.NoMesh {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	for _, r := range ranks {
		why := "mesh: could not take part: " + jd.j.NoMesh[r]
		if c := jd.byHost[r]; c != nil {
			c.Severity = health.Fail
			c.Stages = append(c.Stages, StageMesh)
			c.Evidence = append(c.Evidence, why)
			continue
		}
		h := jd.hosts[r]
		if h == nil {
			continue
		}
		h.Status = WorseState(h.Status, HostFail)
		c := newCulprit(CulpritHost, health.Fail, StageMesh, why).on([]string{h.Host}, []int{r})
		c.FixFrom = StageMesh
		c.Fix = "the host has no RDMA device erdmakit could open while its doctor passed: run `erdmakit devices` and `erdmakit doctor -v` on it " +
			"(driver loaded, ERIs attached: `erdmakit eri status`), and check -d names a device it has"
		jd.add(c, r)
	}
}

// mesh: dead and bad hosts join the doctor's culprit for the host, whose
// remediation comes first; bad links and transient pairs are culprits of
// their own.
func (jd *judging) mesh() {
	m := jd.j.Mesh
	if m == nil {
		return
	}
	for pos := range m.Hosts {
		if h := jd.hosts[m.RankAt(pos)]; h != nil && h.Mesh == "not tested" {
			h.Mesh = "ok"
		}
	}
	for _, cu := range m.DeadHosts {
		jd.meshHost(cu, "dead")
	}
	for _, cu := range m.BadHosts {
		jd.meshHost(cu, "bad host")
	}
	for _, cu := range m.BadLinks {
		for _, r := range cu.Ranks {
			if h := jd.hosts[r]; h != nil && h.Mesh == "ok" {
				h.Mesh = "bad link"
			}
		}
		c := newCulprit(CulpritLink, health.Fail, StageMesh, "mesh: "+cu.Reason).on(cu.Hosts, cu.Ranks)
		c.Positions = append(c.Positions, cu.Positions...)
		c.Devices = append(c.Devices, cu.Devices...)
		c.Evidence, c.FixFrom = boundedEvidence(cu.Evidence, 4), StageMesh
		c.Fix = "each host is fine with others: the path between them is at fault (placement, vSwitch, security group); " +
			"confirm with `erdmakit bw run` between the two, device by device, and open a ticket with Alibaba Cloud support naming both instances"
		jd.add(c, -1)
	}
	for _, pr := range m.Transient {
		c := newCulprit(CulpritLink, health.Warn, StageMesh, "mesh: slow once, fine when tested again (transient)").at(m, pr.Server, pr.Client)
		c.Evidence, c.FixFrom = transientEvidence(m, pr), StageMesh
		c.Fix = "run `erdmakit bw mesh` (or fleet prove) again; a pair slow again is a bad link, other traffic on these hosts during the test explains a one-off"
		jd.add(c, -1)
	}
}

// meshHost adds the mesh's dead or bad host cu (label) to its host's
// culprit, or makes one.
func (jd *judging) meshHost(cu Culprit, label string) {
	if len(cu.Ranks) == 0 {
		return
	}
	rank := cu.Ranks[0]
	if h := jd.hosts[rank]; h != nil {
		h.Mesh = label
		h.Status = WorseState(h.Status, HostFail)
		if h.Doctor == Missing || h.Doctor == Errored {
			h.Status = h.Doctor
		}
	}
	ev := append([]string{cu.Reason}, boundedEvidence(cu.Evidence, 3)...)
	if c := jd.byHost[rank]; c != nil {
		c.Severity = health.Fail
		c.Stages = append(c.Stages, StageMesh)
		c.Evidence = append(c.Evidence, prefixAll("mesh: ", ev)...)
		c.Positions, c.Devices = append(c.Positions[:0], cu.Positions...), append(c.Devices[:0], cu.Devices...)
		if c.FixFrom == StageDoctor && c.Fix == "" {
			c.Fix, c.FixFrom = meshHostFix(label), StageMesh
		}
		return
	}
	c := newCulprit(CulpritHost, health.Fail, StageMesh, "mesh: "+cu.Reason).on(cu.Hosts, []int{rank})
	c.Positions, c.Devices = append(c.Positions, cu.Positions...), append(c.Devices, cu.Devices...)
	c.Evidence = boundedEvidence(cu.Evidence, 4)
	c.Fix, c.FixFrom = meshHostFix(label), StageMesh
	jd.add(c, rank)
}

// nccl: one culprit for the run, its first failing finding's fix.
func (jd *judging) nccl() {
	n := jd.j.NCCL
	if n == nil || (n.Status != health.Fail && n.Status != health.Warn) {
		return
	}
	c := newCulprit(CulpritNCCL, hostSeverity(n.Status), StageNCCL, "")
	c.FixFrom = StageNCCL
	for _, sev := range []health.Severity{health.Fail, health.Warn} {
		for _, f := range n.Findings {
			if f.Severity != sev || c.Reason != "" {
				continue
			}
			c.Reason = fmt.Sprintf("nccl: %s: %s", f.ID, f.Summary)
			c.Evidence = boundedEvidence(f.Evidence, 4)
			if f.Step() != "" {
				c.Fix, c.FixFrom = f.Step(), f.ID
			}
		}
	}
	// The hosts a failed NCCL rank ran on, when the launcher named them,
	// with their launcher ranks in this job (-1: not a host of the job by
	// that name).
	for _, lf := range n.LaunchFailures {
		if lf.Host != "" && !contains(c.Hosts, lf.Host) {
			c.Hosts = append(c.Hosts, lf.Host)
			c.Ranks = append(c.Ranks, rankOf(jd.hosts, lf.Host))
		}
	}
	if c.Fix == "" {
		c.Fix = "read the NCCL run's findings and log (erdmakit nccl run -v)"
	}
	jd.add(c, -1)
}

// finish orders the culprits (worst first, then by stage and rank) and
// the hosts, and gives the status and verdict.
func (jd *judging) finish(p *Proof) {
	status := health.OK
	for _, s := range p.Stages {
		if s.Status.Reported() {
			status = health.Worst(status, s.Status.Severity())
		}
	}
	culprits := jd.culprits
	sort.SliceStable(culprits, func(a, b int) bool {
		ca, cb := culprits[a], culprits[b]
		if ca.Severity.Rank() != cb.Severity.Rank() {
			return ca.Severity.Rank() > cb.Severity.Rank()
		}
		if sa, sb := stageIndex(ca.Stages[0]), stageIndex(cb.Stages[0]); sa != sb {
			return sa < sb
		}
		return firstRank(ca.Ranks) < firstRank(cb.Ranks)
	})
	for _, c := range culprits {
		p.Culprits = append(p.Culprits, *c)
		status = health.Worst(status, c.Severity)
	}
	sort.Ints(jd.order)
	for _, r := range jd.order {
		p.Hosts = append(p.Hosts, *jd.hosts[r])
	}
	p.Status = status
	switch {
	case status == health.Fail:
		p.Verdict = Broken
	case status == health.Warn:
		p.Verdict = Degraded
	case jd.j.Interrupted:
		p.Verdict = Incomplete
	default:
		p.Verdict = Proven
	}
}

// completeStages returns the three stages in order: those that ran as
// given, the others not reached (interrupted) or skipped.
func completeStages(given []Stage, interrupted bool) []Stage {
	out := make([]Stage, 0, 3)
	for _, name := range []string{StageDoctor, StageMesh, StageNCCL} {
		s := Stage{Name: name, Status: HostSkip, Summary: "not run"}
		if interrupted {
			s = Stage{Name: name, Status: StageNotReached, Summary: "the run was interrupted before this stage"}
		}
		for _, g := range given {
			if g.Name == name {
				s = g
			}
		}
		out = append(out, s)
	}
	return out
}

func stageIndex(s string) int {
	switch s {
	case StageDoctor:
		return 0
	case StageMesh:
		return 1
	}
	return 2
}

func firstRank(r []int) int {
	if len(r) == 0 {
		return 1 << 30
	}
	return r[0]
}

// hostSeverity is how a culprit's severity counts: warn stays warn, the
// rest (fail, and a host state's fail: Missing, Errored) is fail.
func hostSeverity(s health.Severity) health.Severity {
	if s == health.Warn {
		return health.Warn
	}
	return health.Fail
}

// problemFindings are a host's warn and fail findings, fail first, each
// kept in the doctor's (the guide's) order.
func problemFindings(hr *HostReport) []health.Finding {
	out := []health.Finding{}
	if hr == nil || hr.Report == nil {
		return out
	}
	for _, sev := range []health.Severity{health.Fail, health.Warn} {
		for _, f := range hr.Report.Findings {
			if f.Severity == sev {
				if f.Evidence == nil {
					f.Evidence = []string{}
				}
				out = append(out, f)
			}
		}
	}
	return out
}

// firstFix is a host's first failing finding in the guide's order (else
// its first warning): the first thing to fix. One with a remediation is
// preferred at each severity.
func firstFix(hr *HostReport) (health.Finding, bool) {
	fs := problemFindings(hr)
	for _, sev := range []health.Severity{health.Fail, health.Warn} {
		for _, f := range fs {
			if f.Severity == sev && f.Step() != "" {
				return f, true
			}
		}
		for _, f := range fs {
			if f.Severity == sev {
				return f, true
			}
		}
	}
	return health.Finding{}, false
}

func hostErrorFix(h HostSummary) string {
	switch h.Status {
	case Missing:
		return "the host did not report: check that it is up and that erdmakit runs there (the launcher's output for rank " + fmt.Sprint(h.Rank) + "), then run again"
	case Errored:
		return "the doctor could not run there: run `erdmakit doctor -v` on the host and fix what it says"
	}
	return ""
}

func meshHostFix(label string) string {
	if label == "dead" {
		return "no RDMA write test with this host worked and its doctor found nothing: run `erdmakit doctor` and `erdmakit bw loopback` on it; " +
			"if both pass, check that the security group lets the other hosts reach its bandwidth port"
	}
	return "slow against known-good hosts while its doctor found nothing: run `erdmakit bw run` from it to a known-good host per device (-d) " +
		"to find the slow ERI; detach and re-attach that ERI (erdmakit eri; " + erdma.ERIDetachNote + "), or open a ticket with Alibaba Cloud support naming the instance"
}

func boundedEvidence(ev []string, n int) []string {
	out := []string{}
	for i, e := range ev {
		if i == n {
			out = append(out, fmt.Sprintf("(%d more)", len(ev)-n))
			break
		}
		out = append(out, e)
	}
	return out
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func transientEvidence(m *MeshReport, p Pair) []string {
	var ev []string
	for _, r := range m.Results {
		if r.Pair == p {
			ev = append(ev, fmt.Sprintf("mesh: %.1f Gbit/s%s", r.Gbps, errSuffix(r.Error)))
		}
	}
	for _, r := range m.SecondPass {
		if r.Pair == p {
			ev = append(ev, fmt.Sprintf("again: %.1f Gbit/s", r.Gbps))
		}
	}
	if ev == nil {
		ev = []string{}
	}
	return ev
}

// rankOf finds the launcher rank of a host name (as the host or its
// #rank-suffixed form); -1 when none.
func rankOf(hosts map[int]*ProofHost, name string) int {
	best := -1
	for r, h := range hosts {
		if h.Host == name || strings.HasPrefix(h.Host, name+"#") {
			if best < 0 || r < best {
				best = r
			}
		}
	}
	return best
}

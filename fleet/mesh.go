package fleet

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/health"
)

// Pair is one directed write test: Client writes to Server.
type Pair struct {
	Server int `json:"server"`
	Client int `json:"client"`
}

// Schedule returns the rounds of a round-robin tournament over n hosts (the
// circle method): every pair meets exactly once, no host is in two tests of
// one round. n-1 rounds for even n; for odd n, n rounds with one host idle in
// each. Directions alternate so each host serves about half its tests.
func Schedule(n int) [][]Pair {
	if n < 2 {
		return nil
	}
	m := n
	if m%2 == 1 {
		m++ // a phantom host: whoever meets it sits the round out
	}
	rounds := make([][]Pair, 0, m-1)
	for r := 0; r < m-1; r++ {
		round := make([]Pair, 0, m/2)
		for i := 0; i < m/2; i++ {
			a := circle(r, i, m)
			b := circle(r, m-1-i, m)
			if a >= n || b >= n {
				continue
			}
			round = append(round, orient(a, b, n))
		}
		rounds = append(rounds, round)
	}
	return rounds
}

// orient picks the server of a pair so that every host serves about half of
// its tests: a serves b when b follows a by less than half the circle of n
// hosts (a regular tournament; ties at exactly half go to the lower rank).
func orient(a, b, n int) Pair {
	d := ((b-a)%n + n) % n
	if 2*d < n || (2*d == n && a < b) {
		return Pair{Server: a, Client: b}
	}
	return Pair{Server: b, Client: a}
}

// circle is the host at position i in round r: position 0 stays fixed, the
// others rotate.
func circle(r, i, m int) int {
	if i == 0 {
		return 0
	}
	return (r+i-1)%(m-1) + 1
}

// PairResult is the outcome of one pair test.
type PairResult struct {
	Pair
	Pass    int            `json:"pass"` // 1 for the mesh, 2 for the second pass
	Round   int            `json:"round,omitempty"`
	Gbps    float64        `json:"gbps"` // over all devices of the pair
	Devices []DeviceResult `json:"devices,omitempty"`
	Error   string         `json:"error,omitempty"`
	// Fault is the end an error is known to come from: FaultServer (it did
	// not serve: its port in use, no answer when asked to serve) or
	// FaultClient (its connection to rank 0 broke); empty when either end
	// may be at fault. The judge counts a fault against that end only.
	Fault   string  `json:"fault,omitempty"`
	Seconds float64 `json:"seconds"`
}

// PairResult.Fault values.
const (
	FaultServer = "server"
	FaultClient = "client"
)

// blamed returns the hosts a result counts against: both ends, or only
// the one a failed test's Fault names.
func (r PairResult) blamed() []int {
	switch {
	case r.Error != "" && r.Fault == FaultServer:
		return []int{r.Server}
	case r.Error != "" && r.Fault == FaultClient:
		return []int{r.Client}
	}
	return []int{r.Server, r.Client}
}

// DeviceResult is one device index's share of a pair test (device i of one
// host to device i of the other).
type DeviceResult struct {
	Index int     `json:"index"`
	Name  string  `json:"name,omitempty"`
	Gbps  float64 `json:"gbps"`
	Error string  `json:"error,omitempty"`
}

// PairTester runs one pair test. It must respect ctx: the mesh bounds every
// test with a timeout so that a dead or hung host cannot stall a round.
type PairTester interface {
	TestPair(ctx context.Context, p Pair) PairResult
}

// MeshOptions tune the mesh.
type MeshOptions struct {
	// ExpectGbps is the expected per-pair bandwidth (e.g. the instance
	// profile's); 0 when unknown, then only the median is a yardstick.
	ExpectGbps float64
	// ExpectFraction of ExpectGbps below which a pair is an outlier (0.9).
	ExpectFraction float64
	// MedianFraction of the fleet median below which a pair is an outlier (0.8).
	MedianFraction float64
	// PairTimeout bounds each pair test (2 min).
	PairTimeout time.Duration
	// Progress, when set, is called after each round.
	Progress func(round, rounds int, results []PairResult)
	// FullMesh tests every pair (n-1 rounds); false: the screen
	// (ScreenSchedule: a ring and ScreenMatchings random perfect matchings,
	// a constant number of rounds), unless the full mesh is as short.
	FullMesh bool
	// ScreenMatchings is the screen's number of random perfect matchings
	// (DefaultScreenMatchings when 0).
	ScreenMatchings int
	// Seed draws the screen's matchings (the same seed, the same pairs).
	Seed int64
}

func (o MeshOptions) withDefaults() MeshOptions {
	if o.ExpectFraction <= 0 {
		o.ExpectFraction = 0.9
	}
	if o.MedianFraction <= 0 {
		o.MedianFraction = 0.8
	}
	if o.PairTimeout <= 0 {
		o.PairTimeout = 2 * time.Minute
	}
	return o
}

// MeshReport is the public schema of `erdmakit bw mesh --json`.
type MeshReport struct {
	Status health.Severity `json:"status"`
	Hosts  []string        `json:"hosts"` // mesh positions: Matrix and pairs index this
	// Ranks maps a mesh position to the launcher rank (ranks that never
	// joined have no position); nil when positions are ranks. RankAt and
	// PositionOf read it.
	Ranks []int `json:"ranks,omitempty"`
	// Schedule is ScheduleScreen or ScheduleFull; Rounds are its rounds.
	// Seed drew the screen's matchings (MeshOptions.Seed repeats them).
	Schedule string `json:"schedule"`
	Seed     int64  `json:"seed"`
	Rounds   int    `json:"rounds"`
	// SecondPassRounds are the rounds of the second pass (disjoint pairs
	// in parallel): the whole mesh took Rounds + SecondPassRounds rounds.
	SecondPassRounds int `json:"second_pass_rounds"`
	// RoundsDone are the rounds run to their end: Rounds unless
	// interrupted (then Results holds every pair measured, those of the
	// round cut short included).
	RoundsDone int     `json:"rounds_done"`
	MedianGbps float64 `json:"median_gbps"`
	ExpectGbps float64 `json:"expect_gbps,omitempty"`
	// Matrix[i][j] is the Gbit/s measured between hosts i and j (the same
	// figure both ways; null where the test failed, where the pair was not
	// tested (the screen: see Tested) or i == j).
	Matrix     Matrix       `json:"matrix"`
	Results    []PairResult `json:"results"`
	Outliers   []PairResult `json:"outliers,omitempty"`
	SecondPass []PairResult `json:"second_pass,omitempty"`
	BadHosts   []Culprit    `json:"bad_hosts,omitempty"`
	BadLinks   []Culprit    `json:"bad_links,omitempty"`
	DeadHosts  []Culprit    `json:"dead_hosts,omitempty"`
	// Transient are outlier pairs that were fine when tested again.
	Transient []Pair `json:"transient,omitempty"`
	// Errors are rendezvous problems (refused connections).
	Errors []string `json:"errors,omitempty"`
	// Authenticated: the ranks proved they hold ERDMAKIT_FLEET_SECRET
	// (Options.Authenticated); false: any process that can reach rank 0
	// could have posed as a rank.
	Authenticated bool `json:"authenticated"`
	// Interrupted: the run was cancelled (SIGINT/SIGTERM); NotReached are the
	// ranks it never got to, which says nothing about their health.
	Interrupted bool  `json:"interrupted,omitempty"`
	NotReached  []int `json:"not_reached,omitempty"`
}

// RankAt is the launcher rank at mesh position pos: Ranks[pos], or pos
// itself when positions are ranks (Ranks nil). It is the one mapping from
// positions to ranks.
func (r *MeshReport) RankAt(pos int) int {
	if r.Ranks != nil && pos >= 0 && pos < len(r.Ranks) {
		return r.Ranks[pos]
	}
	return pos
}

// PositionOf is the mesh position of launcher rank rank; false when the
// rank had none (it never joined, or could not take part).
func (r *MeshReport) PositionOf(rank int) (int, bool) {
	for pos := range r.Hosts {
		if r.RankAt(pos) == rank {
			return pos, true
		}
	}
	return 0, false
}

// HostAt is the host name at mesh position pos ("" past the hosts).
func (r *MeshReport) HostAt(pos int) string {
	if pos >= 0 && pos < len(r.Hosts) {
		return r.Hosts[pos]
	}
	return ""
}

// RunMesh tests pairs of hosts in rounds of disjoint pairs run in parallel
// (the screen, or every pair once with opt.FullMesh), then gives the
// outliers a second pass against known-good hosts to tell a bad host from a
// bad link.
func RunMesh(ctx context.Context, hosts []string, t PairTester, opt MeshOptions) *MeshReport {
	return runMesh(ctx, hosts, nil, t, opt)
}

// runMesh is RunMesh in a job: ranks[i] is the launcher rank at mesh
// position i (nil: positions are ranks), so that the culprits name both.
func runMesh(ctx context.Context, hosts []string, ranks []int, t PairTester, opt MeshOptions) *MeshReport {
	opt = opt.withDefaults()
	n := len(hosts)
	rep := &MeshReport{Hosts: hosts, Ranks: ranks, ExpectGbps: opt.ExpectGbps, Status: health.OK}
	var rounds [][]Pair
	rep.Schedule, rounds = meshSchedule(n, opt)
	rep.Seed = opt.Seed
	rep.Rounds = len(rounds)
	for r, round := range rounds {
		if ctx.Err() != nil {
			break
		}
		res := runBatch(ctx, t, round, 1, r+1, opt.PairTimeout)
		if ctx.Err() != nil {
			// Interrupted during the round: a test that failed was cut
			// short, not reached; it says nothing about the hosts. The
			// round is not done: no progress line says so.
			res = slices.DeleteFunc(res, func(r PairResult) bool { return r.Error != "" })
			rep.Results = append(rep.Results, res...)
			break
		}
		rep.Results = append(rep.Results, res...)
		rep.RoundsDone = r + 1
		if opt.Progress != nil {
			opt.Progress(r+1, len(rounds), res)
		}
	}
	rep.Matrix = matrix(n, rep.Results)
	analyze(ctx, rep, t, opt)
	return rep
}

// runBatch runs disjoint pairs concurrently, each bounded by timeout.
func runBatch(ctx context.Context, t PairTester, pairs []Pair, pass, round int, timeout time.Duration) []PairResult {
	out := make([]PairResult, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			done := make(chan PairResult, 1)
			go func() { done <- t.TestPair(pctx, p) }()
			var r PairResult
			select {
			case r = <-done:
			case <-pctx.Done():
				// A tester that respects ctx answers at once with what it
				// knows (and has released its ends); wait a little for it.
				select {
				case r = <-done:
				case <-time.After(min(timeout, stopGrace)):
					r = PairResult{Error: fmt.Sprintf("no result within %v (host dead or hung)", timeout)}
				}
			}
			r.Pair, r.Pass, r.Round = p, pass, round
			if r.Seconds == 0 {
				r.Seconds = time.Since(start).Seconds()
			}
			out[i] = r
		}()
	}
	wg.Wait()
	return out
}

// Matrix is a mesh's Gbit/s between hosts i and j, nil where there is no
// figure (JSON null). It prints (%v) as rows of numbers, "-" for nil: a
// slice of pointers printed their addresses.
type Matrix [][]*float64

// String is the matrix row by row: "[- 14.27] [14.27 -]".
func (m Matrix) String() string {
	rows := make([]string, len(m))
	for i, row := range m {
		cells := make([]string, len(row))
		for j, v := range row {
			cells[j] = "-"
			if v != nil {
				cells[j] = strconv.FormatFloat(*v, 'f', 2, 64)
			}
		}
		rows[i] = "[" + strings.Join(cells, " ") + "]"
	}
	return strings.Join(rows, " ")
}

// Tested says which pairs the mesh tested, whatever the outcome:
// Tested()[i][j] for hosts i and j (positions, as Matrix). A null in Matrix
// is a failed test where Tested is true, and a pair the screen never asked
// for where it is false (--full-mesh tests every pair). Results past the
// hosts are ignored.
func (r *MeshReport) Tested() [][]bool {
	n := len(r.Hosts)
	t := make([][]bool, n)
	for i := range t {
		t[i] = make([]bool, n)
	}
	for _, p := range r.Results {
		if p.Server >= 0 && p.Server < n && p.Client >= 0 && p.Client < n {
			t[p.Server][p.Client], t[p.Client][p.Server] = true, true
		}
	}
	return t
}

func matrix(n int, results []PairResult) [][]*float64 {
	m := make([][]*float64, n)
	for i := range m {
		m[i] = make([]*float64, n)
	}
	for _, r := range results {
		if r.Error != "" {
			continue
		}
		v := r.Gbps
		m[r.Server][r.Client], m[r.Client][r.Server] = &v, &v
	}
	return m
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// low reports whether a result is an outlier, and why.
func (rep *MeshReport) low(r PairResult, opt MeshOptions) (bool, string) {
	if r.Error != "" {
		return true, r.Error
	}
	if rep.ExpectGbps > 0 && r.Gbps < opt.ExpectFraction*rep.ExpectGbps {
		return true, fmt.Sprintf("%.1f Gbit/s < %.0f%% of the expected %.1f", r.Gbps, 100*opt.ExpectFraction, rep.ExpectGbps)
	}
	if rep.MedianGbps > 0 && r.Gbps < opt.MedianFraction*rep.MedianGbps {
		return true, fmt.Sprintf("%.1f Gbit/s < %.0f%% of the fleet median %.1f", r.Gbps, 100*opt.MedianFraction, rep.MedianGbps)
	}
	return false, ""
}

// meshJudge is the judging of one mesh's results: the first pass's
// counts, then the second pass's tests, each step its own method.
type meshJudge struct {
	rep      *MeshReport
	opt      MeshOptions
	n        int
	tests    []int // tests per host (those a known fault lays elsewhere left out)
	failed   []int // tests that errored per host
	outliers []PairResult
	dead     []bool
	suspect  []bool
	pending  []PairResult // outliers no prime suspect explains: link candidates
	hostOK   map[int]*PairResult
	badHost  []bool
}

func analyze(ctx context.Context, rep *MeshReport, t PairTester, opt MeshOptions) {
	n := len(rep.Hosts)
	j := &meshJudge{rep: rep, opt: opt, n: n, tests: make([]int, n), failed: make([]int, n),
		dead: make([]bool, n), suspect: make([]bool, n), badHost: make([]bool, n), hostOK: map[int]*PairResult{}}
	j.firstPass()
	if len(j.outliers) == 0 {
		return
	}
	j.deadHosts()
	j.suspects()
	j.retestHosts(ctx, t, j.references())
	j.retestLinks(ctx, t)
	rep.nameDevices()
	switch {
	case len(rep.BadHosts) > 0 || len(rep.BadLinks) > 0 || len(rep.DeadHosts) > 0:
		rep.Status = health.Fail
	case len(j.outliers) > 0:
		rep.Status = health.Warn
	}
}

// firstPass sets the median and counts each host's tests, failures and
// outliers.
func (j *meshJudge) firstPass() {
	var good []float64
	for _, r := range j.rep.Results {
		if r.Error == "" {
			good = append(good, r.Gbps)
		}
	}
	j.rep.MedianGbps = median(good)
	for _, r := range j.rep.Results {
		// A test that failed through one end's known fault says nothing
		// about the other end.
		for _, h := range r.blamed() {
			j.tests[h]++
			if r.Error != "" {
				j.failed[h]++
			}
		}
		if bad, _ := j.rep.low(r, j.opt); bad {
			j.outliers = append(j.outliers, r)
		}
	}
	j.rep.Outliers = j.outliers
}

// deadHosts: a host every one of whose tests failed outright is dead: its
// partners' failures are its fault, not theirs.
func (j *meshJudge) deadHosts() {
	for h := 0; h < j.n; h++ {
		if j.tests[h] > 1 && j.failed[h] == j.tests[h] {
			j.dead[h] = true
			c := newCulprit(CulpritHost, health.Fail, StageMesh, "every test with this host failed").at(j.rep, h)
			c.Evidence = []string{fmt.Sprintf("%d of %d tests failed, e.g. %s", j.failed[h], j.tests[h], firstError(j.rep.Results, h))}
			j.rep.DeadHosts = append(j.rep.DeadHosts, *c)
		}
	}
}

// suspects: a host in outliers with most of its partners is a prime
// suspect (the slowness follows it). Other outliers leave both ends suspect
// (either host, or the link between them), or the one end a known fault
// names.
func (j *meshJudge) suspects() {
	outl := make([]int, j.n)
	var live []PairResult
	for _, r := range j.outliers {
		if j.dead[r.Server] || j.dead[r.Client] {
			continue
		}
		live = append(live, r)
		for _, h := range r.blamed() {
			outl[h]++
		}
	}
	prime := make([]bool, j.n)
	for h := 0; h < j.n; h++ {
		valid := j.tests[h] - j.failed[h]
		prime[h] = outl[h] >= 2 && 2*outl[h] >= valid
		j.suspect[h] = prime[h]
	}
	for _, r := range live {
		if prime[r.Server] || prime[r.Client] {
			continue
		}
		if b := r.blamed(); len(b) == 1 {
			j.suspect[b[0]] = true // its own fault: no link to test
			continue
		}
		j.suspect[r.Server], j.suspect[r.Client] = true, true
		j.pending = append(j.pending, r)
	}
}

// references are the hosts in no outlier, fastest first.
func (j *meshJudge) references() []int {
	var refs []int
	for h := 0; h < j.n; h++ {
		if !j.suspect[h] && !j.dead[h] {
			refs = append(refs, h)
		}
	}
	byHost := make([][]float64, j.n)
	for _, r := range j.rep.Results {
		if r.Error == "" {
			byHost[r.Server] = append(byHost[r.Server], r.Gbps)
			byHost[r.Client] = append(byHost[r.Client], r.Gbps)
		}
	}
	hostMedian := make([]float64, j.n)
	for h := range hostMedian {
		hostMedian[h] = median(byHost[h])
	}
	sort.SliceStable(refs, func(a, b int) bool { return hostMedian[refs[a]] > hostMedian[refs[b]] })
	return refs
}

// retestHosts is the second pass's step 1: each suspect host against a
// reference; still slow, it is a bad host.
func (j *meshJudge) retestHosts(ctx context.Context, t PairTester, refs []int) {
	var hostTests []Pair
	for h := 0; h < j.n; h++ {
		if j.suspect[h] && len(refs) > 0 {
			hostTests = append(hostTests, Pair{Server: refs[len(hostTests)%len(refs)], Client: h})
		}
	}
	for _, r := range j.rep.runDisjoint(ctx, t, hostTests, j.opt.PairTimeout) {
		j.rep.SecondPass = append(j.rep.SecondPass, r)
		j.hostOK[r.Client] = &r
	}
	for h := 0; h < j.n; h++ {
		r, ok := j.hostOK[h]
		if !ok {
			continue
		}
		if bad, why := j.rep.low(*r, j.opt); bad {
			j.badHost[h] = true
			c := newCulprit(CulpritHost, health.Fail, StageMesh, "slow against a known-good host too").at(j.rep, h)
			c.Evidence = append([]string{fmt.Sprintf("second pass with %s: %s", j.rep.Hosts[r.Server], why)},
				outlierEvidence(j.rep, j.outliers, h, j.tests[h])...)
			j.rep.BadHosts = append(j.rep.BadHosts, *c)
		}
	}
}

// retestLinks is step 2: outlier pairs whose both ends were fine with
// references are tested again: still slow, the link; fine now, transient.
func (j *meshJudge) retestLinks(ctx context.Context, t PairTester) {
	rep := j.rep
	var linkTests []Pair
	for _, r := range j.pending {
		a, b := r.Server, r.Client
		_, testedA := j.hostOK[a]
		_, testedB := j.hostOK[b]
		if j.badHost[a] || j.badHost[b] || !testedA || !testedB {
			continue
		}
		linkTests = append(linkTests, r.Pair)
	}
	for _, r := range rep.runDisjoint(ctx, t, linkTests, j.opt.PairTimeout) {
		rep.SecondPass = append(rep.SecondPass, r)
		bad, why := rep.low(r, j.opt)
		if !bad {
			rep.Transient = append(rep.Transient, r.Pair)
			continue
		}
		_, firstWhy := rep.low(findResult(j.outliers, r.Pair), j.opt)
		c := newCulprit(CulpritLink, health.Fail, StageMesh, "slow between these two hosts only; each is fine with others").at(rep, r.Server, r.Client)
		c.Evidence = []string{"mesh: " + firstWhy, "again: " + why,
			fmt.Sprintf("%s alone: %.1f Gbit/s, %s alone: %.1f Gbit/s", rep.Hosts[r.Server], j.hostOK[r.Server].Gbps, rep.Hosts[r.Client], j.hostOK[r.Client].Gbps)}
		rep.BadLinks = append(rep.BadLinks, *c)
	}
}

// runDisjoint runs pairs in as few batches of host-disjoint pairs as a greedy
// pass finds, each batch in parallel.
func (rep *MeshReport) runDisjoint(ctx context.Context, t PairTester, pairs []Pair, timeout time.Duration) []PairResult {
	var out []PairResult
	left := pairs
	for len(left) > 0 && ctx.Err() == nil {
		busy := map[int]bool{}
		var batch, rest []Pair
		for _, p := range left {
			if busy[p.Server] || busy[p.Client] {
				rest = append(rest, p)
				continue
			}
			busy[p.Server], busy[p.Client] = true, true
			batch = append(batch, p)
		}
		out = append(out, runBatch(ctx, t, batch, 2, 0, timeout)...)
		rep.SecondPassRounds++
		left = rest
	}
	return out
}

func findResult(rs []PairResult, p Pair) PairResult {
	for _, r := range rs {
		if r.Pair == p {
			return r
		}
	}
	return PairResult{Pair: p}
}

func firstError(rs []PairResult, h int) string {
	for _, r := range rs {
		if (r.Server == h || r.Client == h) && r.Error != "" {
			return r.Error
		}
	}
	return ""
}

// outlierEvidence lists up to three first-pass outliers involving h.
func outlierEvidence(rep *MeshReport, outliers []PairResult, h, tests int) []string {
	var ev []string
	count := 0
	for _, r := range outliers {
		if r.Server != h && r.Client != h {
			continue
		}
		count++
		if len(ev) < 3 {
			other := r.Server
			if other == h {
				other = r.Client
			}
			ev = append(ev, fmt.Sprintf("mesh with %s: %.1f Gbit/s%s", rep.Hosts[other], r.Gbps, errSuffix(r.Error)))
		}
	}
	if count > len(ev) {
		ev = append(ev, fmt.Sprintf("... %d of its %d mesh tests were outliers", count, tests))
	}
	return ev
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// Round returns v rounded to 2 decimals for display; NaN for nil.
func Round(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return math.Round(*v*100) / 100
}

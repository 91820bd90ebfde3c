package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
)

// ErrSkipped is wrapped by a stage's error when the stage cannot run
// here (no nccl-tests, no launcher): the proof lists the stage as skipped
// with the error's text, and the verdict does not change.
var ErrSkipped = errors.New("stage skipped")

// JobHost is one rank's host as rank 0 knows it, for a stage that
// launches across the hosts (the NCCL run).
type JobHost struct {
	Rank int    `json:"rank"`
	Host string `json:"host"` // the name the rank gave (os.Hostname)
	Addr string `json:"addr"` // its address as rank 0 sees it ("" for rank 0)
	// GPUs is the GPU count its doctor saw (0: unknown).
	GPUs int `json:"gpus"`
}

// NCCLFunc runs nccl-tests across hosts at rank 0 and diagnoses the run
// (NCCLStage builds one). An error wrapping ErrSkipped skips the stage.
type NCCLFunc func(ctx context.Context, hosts []JobHost) (*nccl.RunReport, error)

// ProveProgress is one step of a long run, for a progress line.
type ProveProgress struct {
	Stage   string `json:"stage"`
	Done    int    `json:"done"`  // hosts reported, mesh rounds done, NCCL rows
	Total   int    `json:"total"` // 0 when unknown
	Message string `json:"message"`
}

// ProveConfig is what Prove runs on this rank.
type ProveConfig struct {
	Options Options
	// Doctor runs the doctor on this host.
	Doctor DoctorFunc
	// Worker runs this host's side of the mesh's pair tests (BwWorker);
	// nil when this host cannot take part, NoWorker saying why (no RDMA
	// device): the proof lists it and the mesh runs without it.
	Worker   Worker
	NoWorker error
	// Port is the bandwidth tests' TCP port (each serving mesh position
	// adds its index, as in RunMeshJob).
	Port int
	Mesh MeshOptions
	// NCCL runs at rank 0 once the mesh is done; nil skips the stage.
	NCCL NCCLFunc
	// Progress, when set, is called at rank 0 as the stages advance.
	Progress func(ProveProgress)
}

// Prove runs fleet prove as one rank of a launcher job: every rank runs
// its doctor and reports it, rank 0 runs the mesh over every pair of hosts
// that have an RDMA device (the others serve its tests), then NCCL across
// all hosts, and judges (Judge). Rank 0 returns the proof; other ranks
// return nil once rank 0 says bye. An interrupted run (ctx cancelled)
// returns the proof of what it reached, Interrupted set, and no error.
func Prove(ctx context.Context, me Rank, addr string, cfg ProveConfig) (*Proof, error) {
	opt := cfg.Options.withDefaults()
	local := func() HostReport {
		hr := localReport(ctx, me.Rank, opt.Hostname, cfg.Doctor)
		if cfg.Worker == nil {
			hr.NoMesh = noWorkerText(cfg.NoWorker)
		}
		return hr
	}
	if me.Rank != 0 {
		conn, err := joinJob(ctx, me, addr, opt)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if err := conn.Send(ctx, msgReport, local()); err != nil {
			return nil, err
		}
		var w Worker = refusingWorker{noWorkerText(cfg.NoWorker)}
		if cfg.Worker != nil {
			w = cfg.Worker
		}
		// Between tasks a member may wait for a whole mesh of other pairs,
		// and then for the NCCL run.
		return nil, work(ctx, conn, w, 24*time.Hour)
	}
	return proveRank0(ctx, me, addr, cfg, opt, local)
}

func noWorkerText(err error) string {
	if err == nil {
		return "no RDMA device to test"
	}
	return err.Error()
}

// refusingWorker is the Worker of a rank without RDMA devices: rank 0
// does not schedule it, and says why if asked anyway.
type refusingWorker struct{ why string }

func (w refusingWorker) Serve(context.Context, int, func()) error {
	return errors.New("this host takes no part in the mesh: " + w.why)
}

func (w refusingWorker) Client(context.Context, string, int) PairResult {
	return PairResult{Error: "this host takes no part in the mesh: " + w.why}
}

func proveRank0(ctx context.Context, me Rank, addr string, cfg ProveConfig, opt Options, local func() HostReport) (*Proof, error) {
	start := time.Now()
	progress := func(p ProveProgress) {
		if cfg.Progress != nil {
			cfg.Progress(p)
		}
	}
	j := Judgement{Size: me.Size, Authenticated: opt.Authenticated, NoMesh: map[int]string{}}
	finish := func() *Proof {
		j.Interrupted = j.Interrupted || ctx.Err() != nil
		j.Seconds = time.Since(start).Seconds()
		return Judge(j)
	}

	// Stage 1: the doctor on every host.
	mine := startLocal(local)
	progress(ProveProgress{Stage: StageDoctor, Total: me.Size, Message: fmt.Sprintf("waiting for %d ranks to join", me.Size)})
	g, err := gatherJob(ctx, me, addr, opt)
	if err != nil {
		mine()
		return nil, err
	}
	defer g.Close()
	defer func() {
		for _, m := range g.Members {
			_ = m.Conn.Send(context.WithoutCancel(ctx), msgBye, struct{}{})
		}
	}()
	working := map[int]bool{} // members whose connection still serves
	fr, reports, interrupted := collectReports(ctx, g, me.Size, mine, opt.Authenticated,
		func(rank int, m *member, received int) {
			working[rank] = true
			progress(ProveProgress{Stage: StageDoctor, Done: received, Total: me.Size, Message: fmt.Sprintf("%s reported", m.Host)})
		})
	j.Doctor, j.Reports, j.Errors = fr, reports, append(j.Errors, g.Errors...)
	j.Stages = append(j.Stages, Stage{Name: StageDoctor, Status: StateOf(fr.Status), Summary: doctorSummary(fr), Seconds: time.Since(start).Seconds()})
	progress(ProveProgress{Stage: StageDoctor, Done: len(reports), Total: me.Size, Message: doctorSummary(fr)})
	if interrupted {
		j.Stages[0].Status = StageNotReached
		j.Stages[0].Summary = "interrupted: " + j.Stages[0].Summary
		return finish(), nil
	}

	// Stage 2: the mesh over the hosts that can take part.
	r0 := &rank0{cfg: cfg, opt: opt, g: g, addr: addr, j: &j, reports: reports, progress: progress}
	st := r0.meshStage(ctx, fr, working)
	j.Stages = append(j.Stages, st)
	progress(ProveProgress{Stage: StageMesh, Message: st.Summary})
	if ctx.Err() != nil {
		return finish(), nil
	}

	// Stage 3: NCCL across every host that joined.
	st = r0.ncclStage(ctx)
	j.Stages = append(j.Stages, st)
	progress(ProveProgress{Stage: StageNCCL, Message: st.Summary})
	return finish(), nil
}

// rank0 is what rank 0's later stages work with.
type rank0 struct {
	cfg      ProveConfig
	opt      Options
	g        *gathering
	addr     string
	j        *Judgement
	reports  []HostReport
	progress func(ProveProgress)
}

// meshStage runs the mesh over the hosts that can take part (an RDMA
// device, a working connection) and says how it went.
func (r0 *rank0) meshStage(ctx context.Context, fr *FleetReport, working map[int]bool) Stage {
	j := r0.j
	names := map[int]string{}
	for _, h := range fr.Hosts {
		names[h.Rank] = h.Host
	}
	var ranks []int
	for _, hr := range r0.reports {
		switch {
		case hr.NoMesh != "":
			j.NoMesh[hr.Rank] = hr.NoMesh
		case hr.Rank == 0 && r0.cfg.Worker == nil:
			j.NoMesh[0] = noWorkerText(r0.cfg.NoWorker)
		case hr.Rank == 0 || working[hr.Rank]:
			ranks = append(ranks, hr.Rank)
		}
	}
	sort.Ints(ranks)
	start := time.Now()
	st := Stage{Name: StageMesh}
	if len(ranks) < 2 {
		st.Status = HostSkip
		st.Summary = fmt.Sprintf("%d host(s) can take part: no pair to test", len(ranks))
		if len(j.NoMesh) > 0 {
			st.Summary += "; " + noMeshSummary(j.NoMesh, names)
		}
	} else {
		rep := r0.mesh(ctx, ranks, names)
		j.Mesh = rep
		st.Status = StateOf(rep.Status)
		st.Summary = meshSummary(rep)
		if len(j.NoMesh) > 0 {
			st.Summary += "; without " + noMeshSummary(j.NoMesh, names)
		}
	}
	st.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		st.Status, st.Summary = StageNotReached, "interrupted: "+st.Summary
	}
	return st
}

// mesh runs the mesh over ranks (launcher ranks, rank 0 first) and returns
// its report in launcher ranks.
func (r0 *rank0) mesh(ctx context.Context, ranks []int, names map[int]string) *MeshReport {
	host, _, _ := net.SplitHostPort(r0.addr)
	nt := &netTester{self: r0.cfg.Worker, selfIP: host, members: map[int]*member{}, ips: map[int]string{}, port: r0.cfg.Port, nextID: make(chan int, 1)}
	nt.nextID <- 1
	hosts := make([]string, len(ranks))
	for i, r := range ranks {
		hosts[i] = names[r]
		if r != 0 {
			nt.members[i] = r0.g.Members[r]
			nt.ips[i] = remoteIP(r0.g.Members[r].Conn)
		}
	}
	mopt := r0.cfg.Mesh
	user := mopt.Progress
	mopt.Progress = func(round, rounds int, res []PairResult) {
		if user != nil {
			user(round, rounds, res)
		}
		r0.progress(ProveProgress{Stage: StageMesh, Done: round, Total: rounds, Message: fmt.Sprintf("round %d/%d done (%d pairs)", round, rounds, len(res))})
	}
	sched, rounds := meshSchedule(len(ranks), mopt)
	pairs := 0
	for _, r := range rounds {
		pairs += len(r)
	}
	r0.progress(ProveProgress{Stage: StageMesh, Total: len(rounds), Message: fmt.Sprintf("%d hosts, %d pairs in %d rounds (%s)", len(ranks), pairs, len(rounds), sched)})
	rep := runMesh(ctx, hosts, ranks, nt, mopt)
	rep.Authenticated = r0.opt.Authenticated
	if rep.Results == nil {
		rep.Results = []PairResult{}
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	return rep
}

// ncclStage runs NCCL across every host that joined and says how it went.
func (r0 *rank0) ncclStage(ctx context.Context) Stage {
	j := r0.j
	start := time.Now()
	st := Stage{Name: StageNCCL}
	if r0.cfg.NCCL == nil {
		st.Status, st.Summary = HostSkip, "no NCCL run configured"
		st.Seconds = time.Since(start).Seconds()
		return st
	}
	jh := []JobHost{{Rank: 0, Host: r0.opt.Hostname}}
	for r, m := range r0.g.Members {
		jh = append(jh, JobHost{Rank: r, Host: m.Host, Addr: remoteIP(m.Conn)})
	}
	sort.Slice(jh, func(a, b int) bool { return jh[a].Rank < jh[b].Rank })
	for i := range jh {
		for _, hr := range r0.reports {
			if hr.Rank == jh[i].Rank && hr.Report != nil && hr.Report.Host != nil && hr.Report.Host.GPU != nil {
				jh[i].GPUs = hr.Report.Host.GPU.Count
			}
		}
	}
	r0.progress(ProveProgress{Stage: StageNCCL, Message: fmt.Sprintf("over %d host(s)", len(jh))})
	rep, err := r0.cfg.NCCL(ctx, jh)
	switch {
	case errors.Is(err, ErrSkipped):
		st.Status, st.Summary = HostSkip, strings.TrimSuffix(err.Error(), ": "+ErrSkipped.Error())
	case ctx.Err() != nil:
		st.Status, st.Summary = StageNotReached, "interrupted during the NCCL run"
		j.NCCL = rep
	case err != nil:
		st.Status, st.Summary = HostFail, "could not run: "+err.Error()
		j.Errors = append(j.Errors, "nccl: "+err.Error())
	case rep == nil:
		st.Status, st.Summary = HostFail, "the NCCL run gave no report"
	default:
		j.NCCL = rep
		st.Status, st.Summary = StateOf(rep.Status), ncclSummary(rep)
	}
	st.Seconds = time.Since(start).Seconds()
	return st
}

func doctorSummary(fr *FleetReport) string {
	var parts []string
	for _, s := range HostStates() {
		if n := len(fr.ByStatus[s]); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return fmt.Sprintf("%d hosts: %s", fr.Size, strings.Join(parts, ", "))
}

func meshSummary(m *MeshReport) string {
	s := fmt.Sprintf("%d pairs of %d hosts in %d rounds, median %.1f Gbit/s", len(m.Results), len(m.Hosts), m.Rounds, m.MedianGbps)
	if m.Schedule == ScheduleScreen {
		s = fmt.Sprintf("%d pairs of %d hosts in %d rounds (screen: %d partners each), median %.1f Gbit/s",
			len(m.Results), len(m.Hosts), m.Rounds, 2*len(m.Results)/max(1, len(m.Hosts)), m.MedianGbps)
	}
	if m.ExpectGbps > 0 {
		s += fmt.Sprintf(" (expected %.1f)", m.ExpectGbps)
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(m.BadHosts), "bad host"}, {len(m.BadLinks), "bad link"}, {len(m.DeadHosts), "dead host"}, {len(m.Transient), "transient outlier"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s)", c.n, c.what))
		}
	}
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s
}

func noMeshSummary(no map[int]string, names map[int]string) string {
	var ranks []int
	for r := range no {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	var parts []string
	for i, r := range ranks {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ranks)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", names[r], no[r]))
	}
	return fmt.Sprintf("%d host(s) cannot take part: %s", len(ranks), strings.Join(parts, ", "))
}

func ncclSummary(r *nccl.RunReport) string {
	s := "nccl-tests"
	if r.TestResult != nil && r.Collective != "" {
		s = r.Collective
	}
	if r.Ranks > 0 {
		s += fmt.Sprintf(", %d ranks on %d hosts", r.Ranks, r.Hosts)
	}
	if r.TestResult != nil && r.AvgBusBW > 0 {
		s += fmt.Sprintf(", avg bus bandwidth %.2f GB/s", r.AvgBusBW)
	}
	if r.ExpectBusBWGBs > 0 {
		s += fmt.Sprintf(" (expected %.1f)", r.ExpectBusBWGBs)
	}
	for _, f := range r.Findings {
		if f.Severity == health.Fail {
			return s + "; " + f.ID + ": " + f.Summary
		}
	}
	return s
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
)

// portWorker is a Worker without sockets of its own: the server position
// is the port's offset from base (the mesh gives each serving position its
// own port), the "bandwidth" the slower of the two ranks' modelled rates.
type portWorker struct {
	rank, base int
	rate       func(rank int) float64
}

func (w portWorker) Serve(ctx context.Context, port int, ready func()) error {
	ready()
	<-ctx.Done()
	return nil
}

func (w portWorker) Client(ctx context.Context, host string, port int) PairResult {
	g := min(w.rate(port-w.base), w.rate(w.rank))
	return PairResult{Gbps: g, Devices: []DeviceResult{{Index: 0, Name: "erdma_0", Gbps: g / 2}, {Index: 1, Name: "erdma_1", Gbps: g / 2}}}
}

type proveRun struct {
	size    int
	worker  func(rank, base int) Worker
	noMesh  map[int]error
	doctor  func(rank int) *erdma.Report
	ncclRun NCCLFunc
	ctx     context.Context
	mesh    MeshOptions
}

// run starts every rank of a job in this process over loopback and
// returns rank 0's proof.
func (pr proveRun) run(t *testing.T) (*Proof, []ProveProgress) {
	t.Helper()
	addr := freeAddr(t)
	ctx := pr.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	base := 20000 + int(time.Now().UnixNano()%20000)
	cfgOf := func(r int) ProveConfig {
		cfg := ProveConfig{
			Options: Options{Join: 20 * time.Second, Message: 20 * time.Second, Hostname: fmt.Sprintf("gpu%03d", r)},
			Doctor:  func(context.Context) (*erdma.Report, error) { return pr.doctor(r), nil },
			Port:    base,
			Mesh:    pr.mesh,
		}
		if err, ok := pr.noMesh[r]; ok {
			cfg.NoWorker = err
		} else {
			cfg.Worker = pr.worker(r, base)
		}
		return cfg
	}
	var wg sync.WaitGroup
	for r := 1; r < pr.size; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me, _ := NewRank(r, pr.size, "test")
			p, err := Prove(ctx, me, addr, cfgOf(r))
			if ctx.Err() == nil {
				assert.NoError(t, err, "rank %d", r)
			}
			assert.Nil(t, p)
		}()
	}
	me, _ := NewRank(0, pr.size, "test")
	cfg := cfgOf(0)
	cfg.NCCL = pr.ncclRun
	var mu sync.Mutex
	var events []ProveProgress
	cfg.Progress = func(p ProveProgress) { mu.Lock(); events = append(events, p); mu.Unlock() }
	p, err := Prove(ctx, me, addr, cfg)
	require.NoError(t, err)
	wg.Wait()
	return p, events
}

func okDoctor(int) *erdma.Report {
	return report(health.OK, ok("erdma-devices"), ok("gdr-peermem"))
}

// TestProveOverLoopback: six ranks in one session: rank 2's doctor fails,
// rank 4 is slow in the mesh, rank 5 has no RDMA device (it reports and
// is left out of the mesh, said so); NCCL runs across all six hosts and
// passes. The verdict is broken; each culprit has its fix.
func TestProveOverLoopback(t *testing.T) {
	rate := func(r int) float64 {
		if r == 4 {
			return 30
		}
		return 100
	}
	var ncclHosts []JobHost
	pr := proveRun{size: 6,
		worker: func(r, base int) Worker { return portWorker{rank: r, base: base, rate: rate} },
		noMesh: map[int]error{5: errors.New("no RDMA device found")},
		doctor: func(r int) *erdma.Report {
			if r == 2 {
				return report(health.Fail, ok("erdma-devices"), peermemFail)
			}
			return okDoctor(r)
		},
		ncclRun: func(ctx context.Context, hosts []JobHost) (*nccl.RunReport, error) {
			ncclHosts = hosts
			rep := nccl.NewRunReport(&nccl.RunResult{ExitCode: 0}, nccl.Expectation{})
			rep.Status, rep.Findings = health.OK, []health.Finding{{ID: "nccl-transport", Severity: health.OK, Summary: "NET/IB"}}
			return rep, nil
		},
		mesh: MeshOptions{ExpectGbps: 95, PairTimeout: 10 * time.Second},
	}
	p, events := pr.run(t)
	assert.Equal(t, Broken, p.Verdict)
	assert.Equal(t, 2, p.Exit())
	require.Len(t, p.Stages, 3)
	assert.Equal(t, HostFail, p.Stages[0].Status)
	assert.Equal(t, HostFail, p.Stages[1].Status)
	assert.Contains(t, p.Stages[1].Summary, "gpu005 (no RDMA device found)")
	assert.Equal(t, HostOK, p.Stages[2].Status)
	require.NotNil(t, p.Mesh)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, p.Mesh.Ranks, "rank 5 is not in the mesh")
	assert.Len(t, p.Mesh.Results, 10)
	require.Len(t, ncclHosts, 6, "NCCL runs over every host")
	assert.Equal(t, "gpu005", ncclHosts[5].Host)

	require.Len(t, p.Culprits, 3, "%+v", p.Culprits)
	assert.Equal(t, []int{2}, p.Culprits[0].Ranks)
	assert.Equal(t, "modprobe nvidia_peermem", p.Culprits[0].Fix)
	assert.Equal(t, []int{4}, p.Culprits[1].Ranks)
	assert.Equal(t, StageMesh, p.Culprits[1].FixFrom)
	assert.Equal(t, []int{5}, p.Culprits[2].Ranks, "a host without an RDMA device is not proven")
	assert.Equal(t, "mesh: could not take part: no RDMA device found", p.Culprits[2].Reason)
	assert.Equal(t, "no rdma device", p.Hosts[5].Mesh)
	assert.Equal(t, "no RDMA device found", p.Hosts[5].MeshNote)
	assert.Equal(t, "bad host", p.Hosts[4].Mesh)

	stages := map[string]bool{}
	for _, e := range events {
		stages[e.Stage] = true
	}
	assert.True(t, stages[StageDoctor] && stages[StageMesh] && stages[StageNCCL], "progress from every stage: %+v", events)
}

// TestProveSimulated256Hosts: 256 ranks in one session over loopback
// (one goroutine each, one TCP connection to rank 0): every pair is tested
// through the real protocol, the slow host is named, NCCL is skipped with
// its reason and the verdict says broken.
func TestProveSimulated256Hosts(t *testing.T) {
	if testing.Short() {
		t.Skip("256 ranks")
	}
	const n = 256
	rate := func(r int) float64 {
		if r == 77 {
			return 20
		}
		return 190
	}
	pr := proveRun{size: n, doctor: okDoctor,
		worker: func(r, base int) Worker { return portWorker{rank: r, base: base, rate: rate} },
		ncclRun: func(context.Context, []JobHost) (*nccl.RunReport, error) {
			return nil, fmt.Errorf("nccl-tests all_reduce_perf not found: %w", ErrSkipped)
		},
		mesh: MeshOptions{ExpectGbps: 180, PairTimeout: 30 * time.Second},
	}
	start := time.Now()
	p, _ := pr.run(t)
	t.Logf("256 ranks: %v", time.Since(start))
	assert.Equal(t, Broken, p.Verdict)
	require.NotNil(t, p.Mesh)
	// The screen (issue 54 item 2): a ring and 4 random matchings, 6
	// rounds of 128 pairs, not 255 rounds.
	assert.Equal(t, ScheduleScreen, p.Mesh.Schedule)
	assert.Equal(t, 6, p.Mesh.Rounds)
	assert.Len(t, p.Mesh.Results, 6*n/2)
	require.Len(t, p.Culprits, 1, "%+v", p.Culprits)
	assert.Equal(t, []int{77}, p.Culprits[0].Ranks)
	assert.Equal(t, HostSkip, p.Stages[2].Status)
	assert.Contains(t, p.Stages[2].Summary, "not found")
}

// TestProveInterruptedReportsWhatItReached: cancelled during the mesh,
// rank 0 returns the doctor's stage, the mesh as not reached, NCCL not
// reached, and exit 3.
func TestProveInterruptedReportsWhatItReached(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := func(int, int) Worker { return hangingWorker{cancel: cancel} }
	pr := proveRun{size: 3, doctor: okDoctor, worker: slow, ctx: ctx,
		ncclRun: func(context.Context, []JobHost) (*nccl.RunReport, error) {
			t.Error("NCCL must not run after an interruption")
			return nil, nil
		},
		mesh: MeshOptions{PairTimeout: 30 * time.Second}}
	p, _ := pr.run(t)
	assert.True(t, p.Interrupted)
	assert.Equal(t, 3, p.Exit())
	assert.Equal(t, Incomplete, p.Verdict)
	assert.Equal(t, HostOK, p.Stages[0].Status)
	assert.Equal(t, StageNotReached, p.Stages[1].Status)
	assert.Equal(t, StageNotReached, p.Stages[2].Status)
	assert.Empty(t, p.Culprits, "tests cut short blame no host")
}

// hangingWorker's client cancels the run and blocks until it ends.
type hangingWorker struct{ cancel func() }

func (w hangingWorker) Serve(ctx context.Context, port int, ready func()) error {
	ready()
	<-ctx.Done()
	return nil
}

func (w hangingWorker) Client(ctx context.Context, host string, port int) PairResult {
	w.cancel()
	<-ctx.Done()
	return PairResult{Error: ctx.Err().Error()}
}

package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fault is what goes wrong with one rank of a mesh, from its k-th test on.
type fault int

const (
	faultStall fault = iota // stops answering for good, as under SIGSTOP
	faultKill               // the rank's process ends mid-round
	faultSlow               // answers, but later than the pair timeout
)

// faultWorker is a tcpWorker (real loopback ports, a test taking testTime)
// whose rank turns bad from its k-th call on.
type faultWorker struct {
	tcpWorker
	testTime time.Duration
	fault    fault
	k        int32
	calls    *atomic.Int32
	slow     time.Duration
	release  <-chan struct{} // ends a stall (the test's end, like SIGCONT+kill)
	kill     func()          // ends this rank's process
}

// bad reports whether this call is at or after the k-th: the fault applies.
func (w *faultWorker) bad() bool { return w.k > 0 && w.calls.Add(1) >= w.k }

// misbehave applies the fault; false: the call must fail now (killed).
func (w *faultWorker) misbehave() bool {
	switch w.fault {
	case faultStall:
		<-w.release // deaf to its context, like a stopped process
		return false
	case faultKill:
		w.kill()
		return false
	default:
		time.Sleep(w.slow) // deaf to its context, then goes on
		return true
	}
}

func (w *faultWorker) Serve(ctx context.Context, port int, ready func()) error {
	if w.bad() && !w.misbehave() {
		return fmt.Errorf("rank %d gone", w.rank)
	}
	return w.tcpWorker.Serve(ctx, port, ready)
}

func (w *faultWorker) Client(ctx context.Context, host string, port int) PairResult {
	if w.bad() && !w.misbehave() {
		return PairResult{Error: fmt.Sprintf("rank %d gone", w.rank)}
	}
	select { // the test itself takes testTime
	case <-time.After(w.testTime):
	case <-ctx.Done():
		return PairResult{Error: ctx.Err().Error()}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return PairResult{Error: err.Error()}
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	var server int
	if _, err := fmt.Fscan(c, &server); err != nil {
		return PairResult{Error: err.Error()}
	}
	return PairResult{Gbps: min(w.rate(server), w.rate(w.rank))}
}

// runFaultMesh runs a mesh of size ranks as goroutines over loopback, rank
// bad turning bad at its k-th test with f; it returns rank 0's report.
func runFaultMesh(t *testing.T, size, bad int, f fault, k int32, base int) *MeshReport {
	t.Helper()
	addr := freeAddr(t)
	const testTime = 100 * time.Millisecond
	timeout := 1500 * time.Millisecond
	rate := func(int) float64 { return 100 }
	opt := Options{Join: 10 * time.Second, Message: 10 * time.Second}
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	worker := func(r int, kill func()) Worker {
		w := &faultWorker{tcpWorker: tcpWorker{rank: r, rate: rate}, testTime: testTime, calls: new(atomic.Int32),
			fault: f, slow: timeout + timeout/2, release: release, kill: kill}
		if r == bad {
			w.k = k
		}
		return w
	}
	for r := 1; r < size; r++ {
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			o := opt
			o.Hostname = fmt.Sprintf("gpu%d", r)
			me, _ := NewRank(r, size, "test")
			_, _ = RunMeshJob(ctx, me, addr, worker(r, cancel), base, o, MeshOptions{})
		}()
	}
	me, _ := NewRank(0, size, "test")
	o := opt
	o.Hostname = "gpu0"
	rep, err := RunMeshJob(context.Background(), me, addr, worker(0, nil), base, o, MeshOptions{PairTimeout: timeout})
	require.NoError(t, err)
	return rep
}

// TestMeshBlamesOnlyTheFaultyRank: issue 54 item 1. A rank that stalls (as
// under SIGSTOP), one killed mid-round and one that answers later than the
// pair timeout: in each of 10 runs (the fault striking at its 1st to 3rd
// test, as server or client) the mesh names that rank and no healthy one.
// Before, a timed-out test left its server listening on its port, the
// server's next test failed with "address already in use" and the judge
// blamed the partner.
func TestMeshBlamesOnlyTheFaultyRank(t *testing.T) {
	const size, bad, runs = 4, 2, 10
	base := 22000 + int(time.Now().UnixNano()%4000)
	for fi, f := range []fault{faultStall, faultKill, faultSlow} {
		for run := 0; run < runs; run++ {
			name := fmt.Sprintf("%s/run%d", []string{"stall", "kill", "slow"}[fi], run)
			port := base + 10*(fi*runs+run) // each run its own ports: they run in parallel
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rep := runFaultMesh(t, size, bad, f, int32(run%3+1), port)
				var named [][]int
				for _, list := range [][]Culprit{rep.BadHosts, rep.BadLinks, rep.DeadHosts} {
					for _, c := range list {
						named = append(named, c.Ranks)
					}
				}
				require.NotEmpty(t, named, "no culprit: %+v", rep)
				for _, ranks := range named {
					assert.Equal(t, []int{bad}, ranks, "a healthy host named: bad %+v links %+v dead %+v\nresults %+v\nsecond %+v",
						rep.BadHosts, rep.BadLinks, rep.DeadHosts, rep.Results, rep.SecondPass)
				}
			})
		}
	}
}

// TestMeshInterruptedSaysNoRoundDone: report-2 item 8. A mesh interrupted
// mid-round used to print "round 2/3 done (0 pairs)": the round cut short
// is not done, RoundsDone says how many were, and Results keeps the pairs
// measured before the interrupt.
func TestMeshInterruptedSaysNoRoundDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := newSim(4, 100)
	var calls atomic.Int32
	tester := testerFunc(func(ctx context.Context, p Pair) PairResult {
		if calls.Add(1) == 3 { // the first test of round 2
			cancel()
			<-ctx.Done()
			return PairResult{Error: ctx.Err().Error()}
		}
		return sim.TestPair(ctx, p)
	})
	var lines []string
	rep := RunMesh(ctx, hostNames(4), tester, MeshOptions{PairTimeout: 5 * time.Second, Progress: func(round, rounds int, res []PairResult) {
		lines = append(lines, fmt.Sprintf("round %d/%d done (%d pairs)", round, rounds, len(res)))
	}})
	assert.Equal(t, []string{"round 1/3 done (2 pairs)"}, lines)
	assert.Equal(t, 3, rep.Rounds)
	assert.Equal(t, 1, rep.RoundsDone)
	assert.Len(t, rep.Results, 3, "round 1's two pairs and the one round 2 finished: %+v", rep.Results)
	assert.Empty(t, rep.BadHosts)
	assert.Empty(t, rep.DeadHosts)
}

type testerFunc func(ctx context.Context, p Pair) PairResult

func (f testerFunc) TestPair(ctx context.Context, p Pair) PairResult { return f(ctx, p) }

// TestMemberInterruptedSaysSo: report-2 item 8. A member whose own process
// is interrupted while it waits for rank 0 used to say "waiting for a task
// from rank 0: ... i/o timeout"; it says it was interrupted. One whose rank
// 0 went away says that.
func TestMemberInterruptedSaysSo(t *testing.T) {
	t.Run("interrupted", func(t *testing.T) {
		_, m, _, _ := session(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		err := work(ctx, m, tcpWorker{}, time.Hour)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "interrupted while waiting for rank 0's next task")
		assert.NotContains(t, err.Error(), "i/o timeout")
	})
	t.Run("rank 0 gone", func(t *testing.T) {
		r0, m, _, _ := session(t, nil)
		time.AfterFunc(100*time.Millisecond, func() { r0.Close() })
		err := work(context.Background(), m, tcpWorker{}, time.Hour)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "rank 0 closed the mesh session")
	})
}

// TestReadFinishesAFrameBegunBeforeCancel: a read cancelled after a frame's
// first bytes arrived used to stop mid-frame; the next read then met "bad
// magic" and the session was lost (a healthy member blamed for every later
// test: seen in TestMeshBlamesOnlyTheFaultyRank once the screen's timeouts
// made it likely). The frame is read whole, and the next one too.
func TestReadFinishesAFrameBegunBeforeCancel(t *testing.T) {
	r0, m, _, mw := session(t, []byte("k"))
	var sink bytes.Buffer
	real := m.c
	m.c = &discardConn{Conn: mw.Conn, w: &sink}
	require.NoError(t, m.Send(context.Background(), msgResult, TaskResult{ID: 7, Done: true}))
	m.c = real
	raw := sink.Bytes()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = mw.Conn.Write(raw[:5])
		time.Sleep(100 * time.Millisecond)
		cancel()
		time.Sleep(100 * time.Millisecond)
		_, _ = mw.Conn.Write(raw[5:])
	}()
	var r TaskResult
	require.NoError(t, r0.Recv(ctx, msgResult, &r, 5*time.Second))
	assert.Equal(t, 7, r.ID)
	require.NoError(t, m.Send(context.Background(), msgResult, TaskResult{ID: 8, Done: true}))
	require.NoError(t, r0.Recv(context.Background(), msgResult, &r, 5*time.Second))
	assert.Equal(t, 8, r.ID)
}

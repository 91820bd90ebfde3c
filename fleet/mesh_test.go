package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduleEveryPairOnceInNMinus1Rounds(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 8, 64, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rounds := Schedule(n)
			want := n - 1
			if n%2 == 1 {
				want = n
			}
			assert.Len(t, rounds, want)
			seen := map[[2]int]int{}
			serves := make([]int, n)
			for _, round := range rounds {
				busy := map[int]bool{}
				for _, p := range round {
					require.False(t, busy[p.Server] || busy[p.Client], "a host is in two tests of one round")
					busy[p.Server], busy[p.Client] = true, true
					a, b := min(p.Server, p.Client), max(p.Server, p.Client)
					require.NotEqual(t, a, b)
					seen[[2]int{a, b}]++
					serves[p.Server]++
				}
			}
			assert.Len(t, seen, n*(n-1)/2, "every pair")
			for k, c := range seen {
				assert.Equal(t, 1, c, "pair %v tested %d times", k, c)
			}
			for h, s := range serves {
				assert.InDelta(t, float64(n-1)/2, float64(s), float64(n)/4+1, "host %d serves %d of %d tests", h, s, n-1)
			}
		})
	}
	assert.Nil(t, Schedule(1))
}

// simFleet models a fleet: each host has a NIC rate, links can be degraded,
// and a dead host never answers (the test's context expiry stands for the
// timeout).
type simFleet struct {
	rate     []float64
	slowLink map[[2]int]float64
	dead     map[int]bool // refuses connections at once
	hung     map[int]bool // never answers: the mesh's timeout must fire
	mu       sync.Mutex
	calls    map[[2]int]int
}

func newSim(n int, rate float64) *simFleet {
	s := &simFleet{rate: make([]float64, n), slowLink: map[[2]int]float64{}, dead: map[int]bool{}, hung: map[int]bool{}, calls: map[[2]int]int{}}
	for i := range s.rate {
		// A little spread, as real fleets have.
		s.rate[i] = rate * (0.97 + 0.06*float64(i%7)/6)
	}
	return s
}

func key(a, b int) [2]int { return [2]int{min(a, b), max(a, b)} }

func (s *simFleet) TestPair(ctx context.Context, p Pair) PairResult {
	s.mu.Lock()
	s.calls[key(p.Server, p.Client)]++
	s.mu.Unlock()
	if s.hung[p.Server] || s.hung[p.Client] {
		<-ctx.Done()
		return PairResult{Error: "connection timed out"}
	}
	if s.dead[p.Server] || s.dead[p.Client] {
		return PairResult{Error: "connection refused"}
	}
	g := min(s.rate[p.Server], s.rate[p.Client])
	if f, ok := s.slowLink[key(p.Server, p.Client)]; ok {
		g *= f
	}
	return PairResult{Gbps: g, Devices: []DeviceResult{{Index: 0, Gbps: g / 2}, {Index: 1, Gbps: g / 2}}}
}

func hostNames(n int) []string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("gpu%03d", i)
	}
	return h
}

func TestMeshSimulatedFleetNamesTheCulprits(t *testing.T) {
	for _, n := range []int{64, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sim := newSim(n, 190)
			sim.slowLink[key(3, 17)] = 0.5 // a bad link between two good hosts
			sim.rate[42] = 60              // a slow host
			sim.dead[n-1] = true           // a dead host
			rep := RunMesh(context.Background(), hostNames(n), sim, MeshOptions{ExpectGbps: 180, PairTimeout: 10 * time.Second, FullMesh: true})

			assert.Equal(t, n-1, rep.Rounds)
			first := map[[2]int]int{}
			for _, r := range rep.Results {
				assert.Equal(t, 1, r.Pass)
				first[key(r.Server, r.Client)]++
			}
			assert.Len(t, first, n*(n-1)/2, "the mesh tests every pair")
			for k, c := range first {
				require.Equal(t, 1, c, "pair %v", k)
			}

			require.Len(t, rep.DeadHosts, 1)
			assert.Equal(t, []int{n - 1}, rep.DeadHosts[0].Ranks)
			require.Len(t, rep.BadHosts, 1, "%+v", rep.BadHosts)
			assert.Equal(t, []int{42}, rep.BadHosts[0].Ranks)
			assert.Equal(t, []string{"gpu042"}, rep.BadHosts[0].Hosts)
			require.Len(t, rep.BadLinks, 1, "%+v", rep.BadLinks)
			assert.ElementsMatch(t, []int{3, 17}, rep.BadLinks[0].Ranks)
			assert.Empty(t, rep.Transient)
			assert.Equal(t, health.Fail, rep.Status)
			assert.InDelta(t, 190, rep.MedianGbps, 10)

			// The second pass is small: one test per suspect host plus the link.
			assert.LessOrEqual(t, len(rep.SecondPass), 4, "second pass: %d tests", len(rep.SecondPass))
			v := rep.Matrix[3][17]
			require.NotNil(t, v)
			assert.InDelta(t, 0.5*min(sim.rate[3], sim.rate[17]), *v, 1e-9)
			assert.Nil(t, rep.Matrix[n-1][0], "failed tests are null in the matrix")
		})
	}
}

func TestMeshHungHostTimesOut(t *testing.T) {
	sim := newSim(8, 100)
	sim.hung[6] = true
	start := time.Now()
	rep := RunMesh(context.Background(), hostNames(8), sim, MeshOptions{PairTimeout: 50 * time.Millisecond})
	assert.Less(t, time.Since(start), 5*time.Second, "a hung host costs one timeout per round, no more")
	require.Len(t, rep.DeadHosts, 1)
	assert.Equal(t, []int{6}, rep.DeadHosts[0].Ranks)
	assert.Regexp(t, "no result within|timed out", rep.DeadHosts[0].Evidence[0])
	assert.Empty(t, rep.BadHosts)
}

func TestMeshHealthyFleetIsOK(t *testing.T) {
	sim := newSim(16, 100)
	rep := RunMesh(context.Background(), hostNames(16), sim, MeshOptions{})
	assert.Equal(t, health.OK, rep.Status)
	assert.Empty(t, rep.Outliers)
	assert.Empty(t, rep.SecondPass)
}

func TestMeshTransientOutlier(t *testing.T) {
	sim := &flaky{simFleet: newSim(8, 100), once: key(1, 2)}
	rep := RunMesh(context.Background(), hostNames(8), sim, MeshOptions{})
	require.Len(t, rep.Transient, 1)
	assert.Empty(t, rep.BadHosts)
	assert.Empty(t, rep.BadLinks)
	assert.Equal(t, health.Warn, rep.Status)
}

// flaky is slow on one pair the first time only.
type flaky struct {
	*simFleet
	once [2]int
	hit  bool
}

func (f *flaky) TestPair(ctx context.Context, p Pair) PairResult {
	r := f.simFleet.TestPair(ctx, p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if key(p.Server, p.Client) == f.once && !f.hit {
		f.hit = true
		r.Gbps /= 3
	}
	return r
}

func TestMeshCancelledStopsEarly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := RunMesh(ctx, hostNames(8), newSim(8, 100), MeshOptions{})
	assert.Empty(t, rep.Results)
}

func BenchmarkMeshSchedule256(b *testing.B) {
	for b.Loop() {
		_ = Schedule(256)
	}
}

// TestMatrixPrints: issue 26 item 5. A mesh report's matrix holds nil
// where there is no figure: %v prints "-" and the numbers, never
// addresses, and the JSON is still numbers and null.
func TestMatrixPrints(t *testing.T) {
	v := 14.268
	m := Matrix{{nil, &v}, {&v, nil}}
	assert.Equal(t, "[- 14.27] [14.27 -]", fmt.Sprint(m))
	assert.Contains(t, fmt.Sprintf("%+v", MeshReport{Matrix: m}), "Matrix:[- 14.27] [14.27 -]")
	b, err := json.Marshal(MeshReport{Matrix: m})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"matrix":[[null,14.268],[14.268,null]]`)
}

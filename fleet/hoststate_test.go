package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/health"
)

// The one ordering of fleet prove's verdicts, report's worst of several.
func TestWorseVerdict(t *testing.T) {
	for _, tc := range []struct{ a, b, want Verdict }{
		{"", Proven, Proven},
		{Proven, Incomplete, Incomplete},
		{Degraded, Incomplete, Degraded},
		{Broken, Degraded, Broken},
		{Degraded, Broken, Broken},
		{Proven, "bogus", Proven},
	} {
		assert.Equal(t, tc.want, WorseVerdict(tc.a, tc.b), "%q, %q", tc.a, tc.b)
	}
}

// A doctor's report whose status is no severity ("missing": a word only
// the fleet may say of a host) makes the host errored, never a state the
// fleet's status would not count.
func TestAggregateRefusesAStatusThatIsNoSeverity(t *testing.T) {
	for _, status := range []health.Severity{"missing", "not reached", "bogus"} {
		fr := Aggregate(2, []HostReport{
			{Rank: 0, Host: "a", Report: report(health.OK, ok("mtu"))},
			{Rank: 1, Host: "b", Report: report(status, ok("mtu"))},
		}, nil)
		require.Len(t, fr.Hosts, 2)
		assert.Equal(t, Errored, fr.Hosts[1].Status, "%q", status)
		assert.Contains(t, fr.Hosts[1].Error, fmt.Sprintf("%q is not a severity", status))
		assert.Equal(t, health.Fail, fr.Status, "%q", status)
	}
}

// In a job the mesh's culprits name their hosts' launcher ranks (Ranks)
// and mesh positions (Positions), mapped once (RankAt); the proof keeps
// both, and reads the slow ERI by position.
func TestCulpritRanksAreLauncherRanksPositionsArePositions(t *testing.T) {
	const n = 6
	ranks := []int{0, 2, 3, 7, 8, 11} // ranks 1, 4, ... could not take part
	sim := eriSim{simFleet: newSim(n, 190), slowERI: map[int]int{3: 1}}
	sim.dead[5] = true
	names := hostNames(n)
	rep := runMesh(context.Background(), names, ranks, sim, MeshOptions{ExpectGbps: 180, PairTimeout: 10 * time.Second, FullMesh: true})
	require.Len(t, rep.BadHosts, 1, "%+v", rep.BadHosts)
	assert.Equal(t, []int{7}, rep.BadHosts[0].Ranks)
	assert.Equal(t, []int{3}, rep.BadHosts[0].Positions)
	assert.Equal(t, []string{names[3]}, rep.BadHosts[0].Hosts)
	assert.Equal(t, []string{"erdma_1"}, rep.BadHosts[0].Devices, "the mesh names the slow ERI")
	require.Len(t, rep.DeadHosts, 1)
	assert.Equal(t, []int{11}, rep.DeadHosts[0].Ranks)
	assert.Equal(t, []int{5}, rep.DeadHosts[0].Positions)
	for _, c := range append(rep.BadHosts, rep.DeadHosts...) {
		assert.Equal(t, CulpritHost, c.Kind)
		assert.Equal(t, health.Fail, c.Severity)
		assert.Equal(t, []string{StageMesh}, c.Stages)
	}
	pos, in := rep.PositionOf(7)
	assert.True(t, in)
	assert.Equal(t, 3, pos)
	_, in = rep.PositionOf(4)
	assert.False(t, in, "rank 4 had no position")
	assert.Equal(t, 11, rep.RankAt(5))
	assert.Equal(t, 5, RunMesh(context.Background(), names[:2], sim, MeshOptions{}).RankAt(5), "no launcher: positions are ranks")

	reports := make([]HostReport, 0, n)
	for i, r := range ranks {
		reports = append(reports, HostReport{Rank: r, Host: names[i], Report: report(health.OK, ok("mtu"))})
	}
	p := Judge(Judgement{Size: 12, Doctor: Aggregate(12, reports, nil), Reports: reports, Mesh: rep})
	byRank := map[int]Culprit{}
	for _, c := range p.Culprits {
		byRank[c.Ranks[0]] = c
	}
	assert.Equal(t, []int{3}, byRank[7].Positions)
	assert.Equal(t, []string{"erdma_1"}, byRank[7].Devices)
	assert.Equal(t, []int{5}, byRank[11].Positions)
	for _, h := range p.Hosts {
		switch h.Rank {
		case 7:
			assert.Equal(t, "bad host", h.Mesh)
			assert.Equal(t, HostFail, h.Status)
			assert.Equal(t, HostOK, h.Doctor)
		case 11:
			assert.Equal(t, "dead", h.Mesh)
		default:
			assert.Equal(t, "ok", h.Mesh, "rank %d", h.Rank)
		}
	}
}

package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
)

// eriSim is a simulated fleet whose hosts have two ERIs each; one host's
// second ERI is slow.
type eriSim struct {
	*simFleet
	slowERI map[int]int // host -> device index at a quarter of the rate
}

func (s eriSim) TestPair(ctx context.Context, p Pair) PairResult {
	r := s.simFleet.TestPair(ctx, p)
	if r.Error != "" {
		return r
	}
	r.Gbps = 0
	for i := range r.Devices {
		r.Devices[i].Name = fmt.Sprintf("erdma_%d", i)
		for _, h := range []int{p.Server, p.Client} {
			if idx, ok := s.slowERI[h]; ok && idx == i {
				r.Devices[i].Gbps /= 4
			}
		}
		r.Gbps += r.Devices[i].Gbps
	}
	return r
}

var peermemFail = health.Finding{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded",
	Evidence: []string{"/proc/modules: no nvidia_peermem"}, Remediation: "modprobe nvidia_peermem"}

// simulatedProof judges a simulated fleet of n hosts: host 5's doctor
// fails (no nvidia_peermem), host 9's warns (MTU), host 42's second ERI is
// slow (its doctor is clean), the link 3-17 is bad, host n-1 is dead.
func simulatedProof(t *testing.T, n int, run *nccl.RunReport) *Proof {
	t.Helper()
	reports := make([]HostReport, n)
	names := hostNames(n)
	for i := range reports {
		rep := report(health.OK, ok("erdma-devices"), ok("gdr-peermem"), ok("mtu"))
		switch i {
		case 5:
			rep = report(health.Fail, ok("erdma-devices"), peermemFail,
				health.Finding{ID: "mtu", Severity: health.Warn, Summary: "MTU 1500", Remediation: "ip link set eth1 mtu 8500"})
		case 9:
			rep = report(health.Warn, ok("erdma-devices"), ok("gdr-peermem"),
				health.Finding{ID: "mtu", Severity: health.Warn, Summary: "MTU 1500 on eth1", Evidence: []string{"eth1 mtu 1500"}, Remediation: "ip link set eth1 mtu 8500"})
		}
		reports[i] = HostReport{Rank: i, Host: names[i], Report: rep}
	}
	doc := Aggregate(n, append([]HostReport(nil), reports...), nil)
	sim := eriSim{simFleet: newSim(n, 190), slowERI: map[int]int{42: 1}}
	sim.slowLink[key(3, 17)] = 0.5
	sim.dead[n-1] = true
	mesh := RunMesh(context.Background(), names, sim, MeshOptions{ExpectGbps: 180, PairTimeout: 10 * time.Second, FullMesh: true})
	stages := []Stage{{Name: StageDoctor, Status: StateOf(doc.Status)}, {Name: StageMesh, Status: StateOf(mesh.Status)}}
	if run != nil {
		stages = append(stages, Stage{Name: StageNCCL, Status: StateOf(run.Status)})
	} else {
		stages = append(stages, Stage{Name: StageNCCL, Status: HostSkip, Summary: "nccl-tests not found"})
	}
	return Judge(Judgement{Size: n, Doctor: doc, Reports: reports, Mesh: mesh, NCCL: run, Stages: stages, Authenticated: true})
}

// TestJudgeSimulated256Hosts: 256 simulated hosts through the doctor's
// aggregate and the mesh; the proof is broken and names each culprit once
// with the first thing to fix: the doctor's remediation where the doctor
// found the fault, the mesh's where only the mesh did, the slow ERI by
// name.
func TestJudgeSimulated256Hosts(t *testing.T) {
	const n = 256
	p := simulatedProof(t, n, nil)
	assert.Equal(t, Broken, p.Verdict)
	assert.Equal(t, health.Fail, p.Status)
	assert.Equal(t, 2, p.Exit())
	require.Len(t, p.Hosts, n)
	require.Len(t, p.Stages, 3)
	assert.Equal(t, HostSkip, p.Stages[2].Status)

	byKey := map[string]Culprit{}
	for _, c := range p.Culprits {
		k := fmt.Sprintf("%s %v", c.Kind, c.Ranks)
		_, dup := byKey[k]
		require.False(t, dup, "culprit %s named twice", k)
		byKey[k] = c
	}
	require.Len(t, p.Culprits, 5, "%+v", p.Culprits)
	for i := 0; i < 4; i++ {
		assert.Equal(t, health.Fail, p.Culprits[i].Severity, "fail first")
	}
	assert.Equal(t, health.Warn, p.Culprits[4].Severity)

	c5 := byKey["host [5]"]
	assert.Equal(t, "modprobe nvidia_peermem", c5.Fix, "the first failing finding's remediation, not the warning's")
	assert.Equal(t, "gdr-peermem", c5.FixFrom)
	assert.Equal(t, []string{StageDoctor}, c5.Stages)
	assert.Equal(t, []string{"gpu005"}, c5.Hosts)

	c9 := byKey["host [9]"]
	assert.Equal(t, health.Warn, c9.Severity)
	assert.Equal(t, "mtu", c9.FixFrom)

	c42 := byKey["host [42]"]
	assert.Equal(t, []string{StageMesh}, c42.Stages)
	assert.Equal(t, StageMesh, c42.FixFrom)
	assert.Equal(t, []string{"erdma_1"}, c42.Devices, "the slow ERI by name")
	assert.Contains(t, c42.Reason, "slow against a known-good host")

	link := byKey["link [3 17]"]
	if link.Kind == "" {
		link = byKey["link [17 3]"]
	}
	assert.Equal(t, health.Fail, link.Severity)
	assert.ElementsMatch(t, []string{"gpu003", "gpu017"}, link.Hosts)
	assert.Empty(t, link.Devices, "both ERIs of the link are slow: not one ERI's fault")

	dead := byKey[fmt.Sprintf("host [%d]", n-1)]
	assert.Contains(t, dead.Reason, "every test with this host failed")

	assert.Equal(t, "bad host", p.Hosts[42].Mesh)
	assert.Equal(t, HostFail, p.Hosts[42].Status, "the mesh makes a clean doctor's host fail")
	assert.Equal(t, HostOK, p.Hosts[42].Doctor)
	assert.Equal(t, "dead", p.Hosts[n-1].Mesh)
	assert.Equal(t, "bad link", p.Hosts[3].Mesh)
	assert.Equal(t, "ok", p.Hosts[0].Mesh)
	require.Len(t, p.Hosts[5].Findings, 2)
	assert.Equal(t, "gdr-peermem", p.Hosts[5].Findings[0].ID, "fail first")
	assert.Empty(t, p.Hosts[0].Findings)
}

// TestJudgeDoctorAndMeshBlameOneHost: a host the doctor fails and the mesh
// finds slow is one culprit, found by both, fixed by the doctor's
// remediation.
func TestJudgeDoctorAndMeshBlameOneHost(t *testing.T) {
	const n = 8
	names := hostNames(n)
	var reports []HostReport
	for i := 0; i < n; i++ {
		rep := report(health.OK, ok("gdr-peermem"))
		if i == 2 {
			rep = report(health.Fail, peermemFail)
		}
		reports = append(reports, HostReport{Rank: i, Host: names[i], Report: rep})
	}
	doc := Aggregate(n, append([]HostReport(nil), reports...), nil)
	sim := newSim(n, 100)
	sim.rate[2] = 20
	mesh := RunMesh(context.Background(), names, sim, MeshOptions{ExpectGbps: 95})
	p := Judge(Judgement{Size: n, Doctor: doc, Reports: reports, Mesh: mesh,
		Stages: []Stage{{Name: StageDoctor, Status: StateOf(doc.Status)}, {Name: StageMesh, Status: StateOf(mesh.Status)}}})
	require.Len(t, p.Culprits, 1, "%+v", p.Culprits)
	c := p.Culprits[0]
	assert.Equal(t, []string{StageDoctor, StageMesh}, c.Stages)
	assert.Equal(t, "modprobe nvidia_peermem", c.Fix)
	assert.Equal(t, Broken, p.Verdict)
}

func TestJudgeProvenAndNCCL(t *testing.T) {
	const n = 4
	names := hostNames(n)
	var reports []HostReport
	for i := 0; i < n; i++ {
		reports = append(reports, HostReport{Rank: i, Host: names[i], Report: report(health.OK, ok("gdr-peermem"))})
	}
	doc := Aggregate(n, append([]HostReport(nil), reports...), nil)
	mesh := RunMesh(context.Background(), names, newSim(n, 100), MeshOptions{ExpectGbps: 95})
	good := nccl.NewRunReport(&nccl.RunResult{ExitCode: 0}, nccl.Expectation{})
	good.Status, good.Findings = health.OK, []health.Finding{{ID: "nccl-transport", Severity: health.OK, Summary: "NET/IB"}}
	j := Judgement{Size: n, Doctor: doc, Reports: reports, Mesh: mesh, NCCL: good,
		Stages: []Stage{{Name: StageDoctor, Status: HostOK}, {Name: StageMesh, Status: HostOK}, {Name: StageNCCL, Status: HostOK}}}
	p := Judge(j)
	assert.Equal(t, Proven, p.Verdict)
	assert.Equal(t, 0, p.Exit())
	assert.Empty(t, p.Culprits)

	bad := *good
	bad.Status = health.Fail
	bad.Findings = []health.Finding{{ID: "nccl-transport", Severity: health.Fail, Summary: "NCCL fell back to sockets", Remediation: "export NCCL_IB_HCA=erdma"}}
	bad.LaunchFailures = []nccl.LaunchFailure{{Rank: 9, Host: "gpu002", Summary: "rank 9 exited"}}
	j.NCCL, j.Stages[2].Status = &bad, HostFail
	p = Judge(j)
	assert.Equal(t, Broken, p.Verdict)
	require.Len(t, p.Culprits, 1)
	c := p.Culprits[0]
	assert.Equal(t, CulpritNCCL, c.Kind)
	assert.Equal(t, "export NCCL_IB_HCA=erdma", c.Fix)
	assert.Equal(t, "nccl-transport", c.FixFrom)
	assert.Equal(t, []string{"gpu002"}, c.Hosts)
	assert.Equal(t, []int{2}, c.Ranks, "the fleet rank of the host, not NCCL's rank")

	j.NCCL, j.Stages = nil, j.Stages[:1]
	j.Interrupted, j.Mesh = true, nil
	p = Judge(j)
	assert.Equal(t, Incomplete, p.Verdict)
	assert.Equal(t, 3, p.Exit())
	assert.Equal(t, StageNotReached, p.Stages[1].Status)
	assert.Equal(t, StageNotReached, p.Stages[2].Status)
}

// TestProofListsNeverNull: every list in the proof's JSON is [] when empty
// (the mesh matrix's null cells are measurements, not lists).
func TestProofListsNeverNull(t *testing.T) {
	p := Judge(Judgement{Size: 1, Doctor: Aggregate(1, []HostReport{{Rank: 0, Host: "a", Report: report(health.OK, ok("x"))}}, nil)})
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	for _, k := range []string{"culprits", "stages", "hosts", "errors"} {
		assert.IsType(t, []any{}, v[k], k)
	}
	h := v["hosts"].([]any)[0].(map[string]any)
	assert.IsType(t, []any{}, h["findings"])
	assert.Nil(t, v["mesh"])
	assert.Nil(t, v["nccl"])

	p = simulatedProof(t, 8, nil)
	b, err = json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &v))
	for _, c := range v["culprits"].([]any) {
		for _, k := range []string{"hosts", "ranks", "stages", "evidence", "devices"} {
			assert.IsType(t, []any{}, c.(map[string]any)[k], k)
		}
	}
}

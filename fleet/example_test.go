package fleet_test

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/perf"
)

// Four hosts meet in three rounds of two disjoint pairs: every pair once.
func ExampleSchedule() {
	for i, round := range fleet.Schedule(4) {
		fmt.Println("round", i+1, round)
	}
	// Output:
	// round 1 [{3 0} {1 2}]
	// round 2 [{0 1} {2 3}]
	// round 3 [{0 2} {1 3}]
}

// A fleet report puts the odd host first: one host without nvidia_peermem
// among three.
func ExampleAggregate() {
	ok := health.Finding{ID: "gdr-peermem", Severity: health.OK, Summary: "nvidia_peermem loaded"}
	bad := health.Finding{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded"}
	rep := fleet.Aggregate(3, []fleet.HostReport{
		{Rank: 0, Host: "gpu1", Report: &erdma.Report{Status: health.OK, Findings: []health.Finding{ok}}},
		{Rank: 1, Host: "gpu2", Report: &erdma.Report{Status: health.Fail, Findings: []health.Finding{bad}}},
		{Rank: 2, Host: "gpu3", Report: &erdma.Report{Status: health.OK, Findings: []health.Finding{ok}}},
	}, nil)
	fmt.Println("fleet:", rep.Status)
	for _, d := range rep.Differences {
		for _, g := range d.Groups {
			fmt.Println(d.ID, g.Severity, g.Hosts, g.Summary)
		}
	}
	// Output:
	// fleet: fail
	// gdr-peermem fail [gpu2] nvidia_peermem is not loaded
	// gdr-peermem ok [gpu1 gpu3] nvidia_peermem loaded
}

// constantRate is a PairTester over a modelled fleet: every link 100 Gbit/s,
// except host 2's NIC at 40.
type constantRate struct{}

func (constantRate) TestPair(ctx context.Context, p fleet.Pair) fleet.PairResult {
	g := 100.0
	if p.Server == 2 || p.Client == 2 {
		g = 40
	}
	return fleet.PairResult{Gbps: g}
}

// RunMesh over a modelled fleet names the slow host after a second pass.
func ExampleRunMesh() {
	rep := fleet.RunMesh(context.Background(), []string{"a", "b", "c", "d", "e", "f"}, constantRate{}, fleet.MeshOptions{ExpectGbps: 95})
	fmt.Println(rep.Status, "rounds:", rep.Rounds, "tests:", len(rep.Results), "second pass:", len(rep.SecondPass))
	for _, c := range rep.BadHosts {
		fmt.Println("bad host:", c.Hosts, c.Reason)
	}
	// Output:
	// fail rounds: 5 tests: 15 second pass: 1
	// bad host: [c] slow against a known-good host too
}

// The job key: ERDMAKIT_FLEET_SECRET authenticates the ranks; without it
// the key comes from launcher values anyone on the host can read, and the
// reports say the ranks were not authenticated.
func ExampleJobSecret() {
	env := map[string]string{"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"}
	_, source := fleet.JobSecret(func(k string) string { return env[k] })
	fmt.Println(source, "authenticated:", source == fleet.SecretEnv)

	env[fleet.SecretEnv] = "c2VjcmV0IGZvciBvbmUgam9i"
	key, source := fleet.JobSecret(func(k string) string { return env[k] })
	opt := fleet.Options{Secret: key, Authenticated: source == fleet.SecretEnv}
	fmt.Println(source, "authenticated:", opt.Authenticated)
	// Output:
	// SLURM_JOB_ID authenticated: false
	// ERDMAKIT_FLEET_SECRET authenticated: true
}

// Judge weighs the stages' reports: one host without nvidia_peermem makes
// the cluster broken, and its first thing to fix is the doctor's own.
func ExampleJudge() {
	peermem := health.Finding{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded", Remediation: "modprobe nvidia_peermem"}
	ok := health.Finding{ID: "gdr-peermem", Severity: health.OK, Summary: "nvidia_peermem loaded"}
	reports := []fleet.HostReport{
		{Rank: 0, Host: "gpu1", Report: &erdma.Report{Status: health.OK, Findings: []health.Finding{ok}}},
		{Rank: 1, Host: "gpu2", Report: &erdma.Report{Status: health.Fail, Findings: []health.Finding{peermem}}},
	}
	doc := fleet.Aggregate(2, append([]fleet.HostReport(nil), reports...), nil)
	p := fleet.Judge(fleet.Judgement{Size: 2, Doctor: doc, Reports: reports,
		Stages: []fleet.Stage{{Name: fleet.StageDoctor, Status: fleet.StateOf(doc.Status)}}})
	fmt.Println(p.Verdict, "exit", p.Exit())
	for _, c := range p.Culprits {
		fmt.Println(c.Kind, c.Hosts, "fix:", c.Fix, "from", c.FixFrom)
	}
	// Output:
	// broken exit 2
	// host [gpu2] fix: modprobe nvidia_peermem from gdr-peermem
}

// Prove as a job of one rank: the doctor runs, the mesh has no pair to
// test and the NCCL stage is skipped, each saying so.
func ExampleProve() {
	me, _ := fleet.NewRank(0, 1, "flag")
	p, err := fleet.Prove(context.Background(), me, "127.0.0.1:0", fleet.ProveConfig{
		Options: fleet.Options{Hostname: "gpu1"},
		// This host's side of the mesh's pair tests; an emulated device here.
		Worker: &fleet.BwWorker{Links: []perf.Link{perf.NewEmulatedLink("erdma_0", 100, 0)}},
		Doctor: func(context.Context) (*erdma.Report, error) {
			return &erdma.Report{Status: health.OK, Findings: []health.Finding{}}, nil
		},
		NCCL: func(context.Context, []fleet.JobHost) (*nccl.RunReport, error) {
			return nil, fmt.Errorf("nccl-tests all_reduce_perf not found: %w", fleet.ErrSkipped)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Verdict)
	for _, s := range p.Stages {
		fmt.Println(s.Name, s.Status, s.Summary)
	}
	// Output:
	// proven
	// doctor ok 1 hosts: 1 ok
	// mesh skip 1 host(s) can take part: no pair to test
	// nccl skip nccl-tests all_reduce_perf not found
}

// A host's state counts for the fleet's status as its Severity says, and
// WorseState keeps the worse of two: a host that answered and failed says
// more than one that never answered.
func ExampleHostState() {
	for _, s := range []fleet.HostState{fleet.HostWarn, fleet.Missing, fleet.NotReached} {
		fmt.Printf("%s counts as %s; worse of it and fail: %s\n", s, s.Severity(), fleet.WorseState(s, fleet.HostFail))
	}
	// Output:
	// warn counts as warn; worse of it and fail: fail
	// missing counts as fail; worse of it and fail: fail
	// not reached counts as skip; worse of it and fail: fail
}

// In a job, a mesh position maps to its launcher rank once: RankAt.
func ExampleMeshReport_RankAt() {
	rep := &fleet.MeshReport{Hosts: []string{"gpu1", "gpu3", "gpu4"}, Ranks: []int{0, 2, 3}}
	pos, _ := rep.PositionOf(3)
	fmt.Println(rep.HostAt(1), "is rank", rep.RankAt(1), "; rank 3 is at position", pos)
	// Output:
	// gpu3 is rank 2 ; rank 3 is at position 2
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/slurmtest"
)

// buildFakeNCCL builds the nccl-tests stand-in (it replays a recorded
// all_reduce_perf log per rank) and returns it with the sample it replays.
func buildFakeNCCL(t *testing.T) (bin, sample string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/erdmakit/erdmakit/nccl/internal/fakenccltests").CombinedOutput()
	require.NoError(t, err, "%s", out)
	sample, err = filepath.Abs("../../nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
	require.NoError(t, err)
	return bin, sample
}

// proveRankArgs are one rank's fleet prove flags: its recorded host, and
// an emulated device of gbps (0: none, so the rank has no RDMA device).
func proveRankArgs(t *testing.T, common []string, host string, gbps float64) []string {
	t.Helper()
	root, err := filepath.Abs(hostDir(host))
	require.NoError(t, err)
	a := append([]string{"fleet", "prove", "--root", root}, common...)
	if gbps > 0 {
		a = append(a, "--emulate-gbps", fmt.Sprint(gbps))
	}
	return a
}

// checkProof is what both launchers' tests expect of the same five ranks:
// rank 1's doctor fails (no nvidia_peermem: the doctor's fix), rank 2's
// device is slow (1 Gbit/s against 40: the mesh's bad host, with a margin
// a loaded machine's emulated rates keep), rank 3 has no RDMA device (left
// out of the mesh, said so), NCCL ran across the hosts; broken.
func checkProof(t *testing.T, p fleet.Proof) {
	t.Helper()
	assert.Equal(t, fleet.Broken, p.Verdict, "%+v", p)
	assert.Equal(t, health.Fail, p.Status)
	assert.Equal(t, 5, p.Size)
	require.Len(t, p.Stages, 3)
	assert.Equal(t, []string{"doctor", "mesh", "nccl"}, []string{p.Stages[0].Name, p.Stages[1].Name, p.Stages[2].Name})
	assert.Equal(t, fleet.HostFail, p.Stages[1].Status, "%+v", p.Stages[1])
	assert.Contains(t, p.Stages[1].Summary, "1 host(s) cannot take part")
	require.NotNil(t, p.Mesh)
	assert.Equal(t, []int{0, 1, 2, 4}, p.Mesh.Ranks)
	assert.Len(t, p.Mesh.Results, 6)
	require.NotNil(t, p.NCCL, "stage: %+v", p.Stages[2])
	assert.NotEqual(t, fleet.HostSkip, p.Stages[2].Status)
	assert.NotEmpty(t, p.NCCL.Rows, "the NCCL run's rows were parsed")

	byRank := map[int]fleet.Culprit{}
	for _, c := range p.Culprits {
		require.NotEmpty(t, c.Ranks, "%+v", c)
		byRank[c.Ranks[0]] = c
	}
	require.Contains(t, byRank, 1, "%+v", p.Culprits)
	assert.Equal(t, "gdr-peermem", byRank[1].FixFrom)
	assert.Contains(t, byRank[1].Fix, "nvidia_peermem")
	require.Contains(t, byRank, 2, "%+v", p.Culprits)
	assert.Contains(t, byRank[2].Reason, "slow against a known-good host")
	require.Contains(t, byRank, 3, "%+v", p.Culprits)
	assert.Contains(t, byRank[3].Reason, "could not take part")
	require.Len(t, p.Hosts, 5)
	assert.Equal(t, "no rdma device", p.Hosts[3].Mesh)
	assert.NotEmpty(t, p.Hosts[3].MeshNote)
}

// TestFleetProve runs fleet prove as real processes under mpirun, under
// srun, and interrupted; one build of the CLI and of the nccl-tests
// stand-in serves the three.
func TestFleetProve(t *testing.T) {
	bin := buildCLI(t)
	nbin, sample := buildFakeNCCL(t)
	t.Run("mpirun", func(t *testing.T) { testFleetProveUnderMPIRun(t, bin, nbin, sample) })
	t.Run("srun", func(t *testing.T) { testFleetProveUnderSrun(t, bin, nbin, sample) })
	t.Run("interrupted", func(t *testing.T) { testFleetProveInterrupted(t, bin) })
}

// testFleetProveUnderMPIRun runs `fleet prove` as five real processes
// under the real Open MPI mpirun (MPMD app contexts: each rank its recorded
// host and emulated device); rank 0 starts the NCCL stage through a second,
// real mpirun (the stand-in all_reduce_perf, two ranks), which works only
// without the job's per-rank variables.
func testFleetProveUnderMPIRun(t *testing.T, bin, nbin, sample string) {
	mpirun := requireMPIRun(t)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 21000 + fixture.FreePort(t)%20000
	page := filepath.Join(t.TempDir(), "proof.html")
	common := []string{"--rendezvous", rdv, "-p", fmt.Sprint(base), "-D", "1s", "--warmup", "200ms", "--cooldown", "100ms",
		"--join-timeout", "60s", "--timeout", "60s", "--json", "--report", page,
		"--nccl-binary", nbin, "--nccl-ranks-per-host", "2", "--nccl-socket-ifname", "", "--nccl-oversubscribe",
		"--nccl-env", "FAKE_NCCL_SAMPLE=" + sample, "--nccl-timeout", "1m"}
	args := mpirunArgs()
	for i, r := range []struct {
		host string
		gbps float64
	}{{"ebmgn8is-healthy", 40}, {"no-peermem", 40}, {"ebmgn8is-healthy", 1}, {"ebmgn8is-healthy", 0}, {"ebmgn8is-healthy", 40}} {
		if i > 0 {
			args = append(args, ":")
		}
		args = append(args, "-np", "1", bin)
		args = append(args, proveRankArgs(t, common, r.host, r.gbps)...)
	}
	var p fleet.Proof
	stderr := runMPIRunJSONEnv(t, mpirun, nil, args, &p)
	checkProof(t, p)
	assert.Contains(t, p.NCCL.Argv, "mpirun")
	assert.Contains(t, stderr, "fleet prove: mesh: round", "progress on stderr")
	html, err := os.ReadFile(page)
	require.NoError(t, err, "--report writes the page (rank 0)")
	assert.Contains(t, string(html), "erdmakit fleet prove: broken (5 ranks)")
	assert.Contains(t, string(html), "gdr-peermem")
}

// testFleetProveUnderSrun runs the same five ranks under a real srun
// (--multi-prog: each rank its own arguments) in a private Slurm; rank 0's
// NCCL stage is a second step of the same job (srun --overlap), started
// without the fleet step's task variables.
func testFleetProveUnderSrun(t *testing.T, bin, nbin, sample string) {
	slurmtest.Start(t)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 21000 + fixture.FreePort(t)%20000
	common := []string{"--rendezvous", rdv, "-p", fmt.Sprint(base), "-D", "1s", "--warmup", "200ms", "--cooldown", "100ms",
		"--join-timeout", "60s", "--timeout", "60s", "--json",
		"--nccl-binary", nbin, "--nccl-ranks-per-host", "2", "--nccl-socket-ifname=", "--nccl-srun-mpi", "none",
		"--nccl-launcher-arg=--overcommit", "--nccl-env", "FAKE_NCCL_SAMPLE=" + sample, "--nccl-timeout", "1m"}
	var conf strings.Builder
	for i, r := range []struct {
		host string
		gbps float64
	}{{"ebmgn8is-healthy", 40}, {"no-peermem", 40}, {"ebmgn8is-healthy", 1}, {"ebmgn8is-healthy", 0}, {"ebmgn8is-healthy", 40}} {
		fmt.Fprintf(&conf, "%d %s %s\n", i, bin, strings.Join(proveRankArgs(t, common, r.host, r.gbps), " "))
	}
	confFile := filepath.Join(t.TempDir(), "prove.conf")
	require.NoError(t, os.WriteFile(confFile, []byte(conf.String()), 0o644))
	t.Setenv(fleet.SecretEnv, "srun-prove-secret-77a1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "srun", "-n", "5", "--overcommit", "--mpi=none", "--multi-prog", confFile)
	var stderr bytesBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == ExitFail) {
		t.Fatalf("srun: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var p fleet.Proof
	require.NoError(t, json.Unmarshal(out, &p), "stdout:\n%s\nstderr:\n%s", out, stderr.String())
	checkProof(t, p)
	assert.True(t, p.Authenticated)
	assert.Contains(t, p.NCCL.Argv, "srun")
	assert.Contains(t, p.NCCL.Argv, "--overlap")
}

// testFleetProveInterrupted: SIGINT to rank 0 during
// the mesh (two ranks as processes, --rank/--ranks): it exits 3 within
// seconds and its --json holds the doctor's stage, the mesh and NCCL as
// not reached, the verdict incomplete and no host blamed for the test it
// cut short.
func testFleetProveInterrupted(t *testing.T, bin string) {
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 21000 + fixture.FreePort(t)%20000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(rank string) (*exec.Cmd, *bytesBuffer, *bytesBuffer) {
		cmd := exec.CommandContext(ctx, bin, "fleet", "prove", "--rank", rank, "--ranks", "2", "--rendezvous", rdv, "-p", fmt.Sprint(base),
			"--root", root, "--emulate-gbps", "10", "-D", "60s", "--no-nccl", "--json", "--join-timeout", "60s")
		var out, errb bytesBuffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Start())
		return cmd, &out, &errb
	}
	r1, _, _ := start("1")
	defer func() { _ = r1.Process.Kill(); _ = r1.Wait() }()
	r0, out, errb := start("0")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(errb.String(), "fleet prove: mesh: 2 hosts") {
		require.True(t, time.Now().Before(deadline), "the mesh never started: %s", errb.String())
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // into the pair test
	sent := time.Now()
	require.NoError(t, r0.Process.Signal(os.Interrupt))
	err = r0.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	require.True(t, errorsAs(err, &ee), "rank 0: %v\n%s", err, errb.String())
	assert.Equal(t, ExitUnknown, ee.ExitCode())
	assert.Less(t, took, 5*time.Second, "rank 0 took %v to end after SIGINT", took)
	var p fleet.Proof
	require.NoError(t, json.Unmarshal([]byte(out.String()), &p), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	assert.True(t, p.Interrupted)
	assert.Equal(t, fleet.Incomplete, p.Verdict)
	assert.Equal(t, fleet.HostOK, p.Stages[0].Status)
	assert.Equal(t, fleet.StageNotReached, p.Stages[1].Status)
	assert.Equal(t, fleet.StageNotReached, p.Stages[2].Status)
	assert.Empty(t, p.Culprits)
	assert.Contains(t, errb.String(), "interrupted")
	t.Logf("SIGINT to exit: %v", took)
}

// TestFleetProveCloud: issue 54 item 3. fleet prove takes fleet doctor's
// --cloud: each rank's doctor checks its ERIs against the ECS API. The host
// is a recording made with record --cloud against a fake ECS endpoint whose
// two ERIs share NetworkCardIndex 1 (a replay reads the recorded answer,
// asking nothing); with --cloud on the proof names the host and the
// doctor's fix, without --cloud (off, fleet doctor's default) the cloud
// checks do not run. A bad --cloud is refused (exit 3).
func TestFleetProveCloud(t *testing.T) {
	f, flags := eriEnv(t)
	for i, mac := range []string{"00:16:3e:2f:37:75", "00:16:3e:2f:37:76"} {
		f.AddENI(ecsfake.ENI{ID: fmt.Sprintf("eni-eri%d", i), MAC: mac, Type: "Secondary", Mode: "HighPerformance",
			Status: "InUse", InstanceID: "i-cli", CardIndex: 1, DeviceIndex: i + 1})
	}
	rec := filepath.Join(t.TempDir(), "h.tar.gz")
	code, _, stderr := runCLI(append([]string{"record", "--cloud", "--out", rec}, flags...)...)
	require.Equal(t, ExitOK, code, stderr)
	t.Setenv(eri.EndpointEnv, "http://127.0.0.1:1") // a replay asks nothing
	prove := func(cloud ...string) (fleet.Proof, string) {
		t.Helper()
		args := []string{"fleet", "prove", "--rank", "0", "--ranks", "1", "--rendezvous", fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t)),
			"--root", rec, "--no-nccl", "--json"}
		_, out, stderr := runCLI(append(args, cloud...)...)
		var p fleet.Proof
		require.NoError(t, json.Unmarshal([]byte(out), &p), "%s\n%s", out, stderr)
		return p, out
	}
	p, out := prove("--cloud", "on")
	assert.Contains(t, out, "eni-eri0 and eni-eri1 on NetworkCardIndex 1")
	found := false
	for _, c := range p.Culprits {
		if c.FixFrom == "network-card-channel" {
			found = true
			assert.Equal(t, []int{0}, c.Ranks)
			assert.Contains(t, c.Fix, "erdmakit eri attach")
		}
	}
	assert.True(t, found, "%+v", p.Culprits)
	assert.Equal(t, fleet.Broken, p.Verdict)

	_, out = prove()
	assert.NotContains(t, out, "on NetworkCardIndex 1", "without --cloud the cloud checks do not run")

	code, _, stderr = runCLI("fleet", "prove", "--rank", "0", "--ranks", "1", "--cloud", "sometimes")
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, `--cloud "sometimes": want auto, on or off`)
}

// TestBwMeshFaultyRank: issue 54 item 1 with real processes. Four ranks of
// `bw mesh` (--rank/--ranks, emulated devices, a fleet secret, a 6 s pair
// timeout); once the first round is done rank 2 is stopped (SIGSTOP, never
// resumed), killed (SIGKILL), or made slow (stopped 7 s in every 7.3: its
// answers come after the pair timeout). Rank 0 names rank 2 and no
// healthy host; before, a timed-out test left its server listening and
// "address already in use" blamed the partners (ranks 1-3 named in 5 of 5
// runs in the report).
func TestBwMeshFaultyRank(t *testing.T) {
	bin := buildCLI(t)
	for i, fault := range []string{"stopped", "killed", "slow"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			testBwMeshFaultyRank(t, bin, fault, i)
		})
	}
}

// testBwMeshFaultyRank runs one fault. Its pair ports are a range of its
// own (by index) below Linux's ephemeral ports (32768 on): a port some
// other connection holds would be a real "address already in use" (put on
// the server, rightly, but this test asserts that none happens).
func testBwMeshFaultyRank(t *testing.T, bin, fault string, index int) {
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 22000 + 3000*index + fixture.FreePort(t)%2000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := func(rank int, out, errb *bytesBuffer) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, "bw", "mesh", "--rank", fmt.Sprint(rank), "--ranks", "4", "--rendezvous", rdv,
			"-p", fmt.Sprint(base), "--emulate-gbps", "4", "-D", "1s", "--warmup", "200ms", "--cooldown", "100ms",
			"--pair-timeout", "6s", "--join-timeout", "60s", "--timeout", "60s", "--json")
		cmd.Env = append(os.Environ(), "ERDMAKIT_FLEET_SECRET=c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=")
		cmd.Stdout, cmd.Stderr = out, errb
		require.NoError(t, cmd.Start())
		return cmd
	}
	var ranks []*exec.Cmd
	for r := 1; r < 4; r++ {
		var o, e bytesBuffer
		c := start(r, &o, &e)
		ranks = append(ranks, c)
		defer func() { _ = c.Process.Signal(syscall.SIGCONT); _ = c.Process.Kill(); _ = c.Wait() }()
	}
	var out, errb bytesBuffer
	r0 := start(0, &out, &errb)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(errb.String(), "round 1/3 done") {
		require.True(t, time.Now().Before(deadline), "the mesh never got going: %s", errb.String())
		time.Sleep(50 * time.Millisecond)
	}
	rank2 := ranks[1].Process
	switch fault {
	case "killed":
		require.NoError(t, rank2.Signal(syscall.SIGKILL))
	default:
		require.NoError(t, rank2.Signal(syscall.SIGSTOP))
		if fault == "slow" {
			// Runs 0.3 s in every 7.3: each answer comes after the
			// pair timeout, for the rest of the run.
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(7 * time.Second):
					}
					_ = rank2.Signal(syscall.SIGCONT)
					time.Sleep(300 * time.Millisecond)
					_ = rank2.Signal(syscall.SIGSTOP)
				}
			}()
		}
	}
	_ = r0.Wait()
	var rep fleet.MeshReport
	require.NoError(t, json.Unmarshal([]byte(out.String()), &rep), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	var named [][]int
	for _, list := range [][]fleet.Culprit{rep.BadHosts, rep.BadLinks, rep.DeadHosts} {
		for _, c := range list {
			named = append(named, c.Ranks)
		}
	}
	require.NotEmpty(t, named, "%+v", rep)
	for _, r := range named {
		assert.Equal(t, []int{2}, r, "bad %+v links %+v dead %+v\n%s", rep.BadHosts, rep.BadLinks, rep.DeadHosts, errb.String())
	}
	assert.NotContains(t, errb.String()+out.String(), "address already in use")
}

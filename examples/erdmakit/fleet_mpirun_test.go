package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// requireMPIRun returns mpirun's path; under CI its absence is a failure.
func requireMPIRun(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mpirun is required under CI (Debian openmpi-bin): %v", err)
		}
		t.Skip("mpirun not installed")
	}
	return p
}

// buildCLI builds the erdmakit binary for tests that launch it as a program.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "erdmakit")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// mpirunArgs is the start of an mpirun command line that runs as root here.
func mpirunArgs() []string {
	a := []string{"--oversubscribe", "--bind-to", "none", "-mca", "btl", "self,tcp"}
	if os.Geteuid() == 0 {
		a = append([]string{"--allow-run-as-root"}, a...)
	}
	return a
}

// runMPIRunJSON runs mpirun with args (bounded to 3 minutes) and decodes
// rank 0's --json output into v. Rank 0 may exit ExitFail (what the test
// expects it to find); mpirun passes the first non-zero status on.
func runMPIRunJSON(t *testing.T, mpirun string, args []string, v any) {
	t.Helper()
	runMPIRunJSONEnv(t, mpirun, nil, args, v) // nil: this process's environment
}

// TestBwMeshUnderMPIRun runs `bw mesh` as 5 real processes under the real
// Open MPI mpirun on localhost, over emulated devices; the rank given the
// slow device (MPMD: its own app context) is named the bad host. The rates
// are low (4 and 0.8 Gbit/s): an emulated write completes when its wire time
// has passed, so a loaded machine that polls late loses wire time, and at 40
// Gbit/s (13 µs a write) that loss made healthy ranks look slow.
func TestBwMeshUnderMPIRun(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 21000 + fixture.FreePort(t)%20000
	common := []string{"bw", "mesh", "--rendezvous", rdv, "-p", fmt.Sprint(base), "-D", "1s", "--warmup", "200ms", "--cooldown", "100ms", "--join-timeout", "60s", "--timeout", "60s"}
	args := append(mpirunArgs(), "-np", "3", bin)
	args = append(args, append(common, "--emulate-gbps", "4", "--json")...)
	args = append(args, ":", "-np", "1", bin)
	args = append(args, append(common, "--emulate-gbps", "0.8")...)
	args = append(args, ":", "-np", "1", bin)
	args = append(args, append(common, "--emulate-gbps", "4")...)
	var rep fleet.MeshReport
	runMPIRunJSON(t, mpirun, args, &rep)
	assert.Len(t, rep.Hosts, 5)
	assert.Equal(t, 5, rep.Rounds, "5 hosts: 5 rounds with one idle each")
	assert.Len(t, rep.Results, 10, "every pair once")
	require.Len(t, rep.BadHosts, 1, "%+v", rep)
	assert.Equal(t, []int{3}, rep.BadHosts[0].Ranks, "the rank with the 0.8 Gbit/s device")
	assert.Empty(t, rep.BadLinks)
	assert.Empty(t, rep.DeadHosts)
	assert.Equal(t, "fail", string(rep.Status))
}

// TestFleetDoctorUnderMPIRun runs `fleet doctor` as 4 real processes under
// mpirun, each rank reading a different recorded host (MPMD app contexts):
// rank 0 gathers one report in which the host without nvidia_peermem and the
// host with mismatched MTUs stand out.
func TestFleetDoctorUnderMPIRun(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	args := mpirunArgs()
	for i, host := range []string{"ebmgn8is-healthy", "no-peermem", "ebmgn8is-healthy", "mtu-mismatch"} {
		if i > 0 {
			args = append(args, ":")
		}
		root, err := filepath.Abs(hostDir(host))
		require.NoError(t, err)
		args = append(args, "-np", "1", bin, "fleet", "doctor", "--rendezvous", rdv, "--root", root, "--json", "--join-timeout", "60s")
	}
	var rep fleet.FleetReport
	runMPIRunJSON(t, mpirun, args, &rep)
	assert.Equal(t, "fail", string(rep.Status))
	assert.Equal(t, 4, rep.Size)
	require.Len(t, rep.Hosts, 4)
	assert.Equal(t, fleet.HostOK, rep.Hosts[0].Status)
	assert.Equal(t, fleet.HostFail, rep.Hosts[1].Status)
	assert.Contains(t, rep.Hosts[1].Problems, "gdr-peermem")
	assert.Contains(t, rep.Hosts[3].Problems, "mtu")
	diffs := map[string]fleet.Difference{}
	for _, d := range rep.Differences {
		diffs[d.ID] = d
	}
	require.Contains(t, diffs, "gdr-peermem")
	assert.Equal(t, []string{rep.Hosts[1].Host}, diffs["gdr-peermem"].Groups[0].Hosts, "the one host without peermem comes first")
	require.Contains(t, diffs, "mtu")
	assert.Equal(t, []string{rep.Hosts[3].Host}, diffs["mtu"].Groups[0].Hosts)
}

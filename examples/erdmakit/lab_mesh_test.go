//go:build lab && linux && cgo

package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// TestLab2HostBwMesh runs `erdmakit bw mesh` across the lab's two VMs, one
// rank each (VM a is rank 0 and the rendezvous), over their real rxe0
// devices: rank 0 reports the pair's bandwidth, and the test of each side's
// device was real RDMA.
func TestLab2HostBwMesh(t *testing.T) {
	labtest.Require2Host(t)
	rank, rdv := "1", labtest.Peer()
	if labtest.IsServer() {
		rank, rdv = "0", labtest.IP()
	}
	code, out, stderr := runCLI("bw", "mesh", "--rank", rank, "--ranks", "2",
		"--rendezvous", fmt.Sprintf("%s:18710", rdv), "-p", "18720", "-d", labtest.Device(),
		"-D", "1s", "--warmup", "300ms", "--cooldown", "300ms", "--join-timeout", "90s", "--timeout", "90s", "--json")
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	if !labtest.IsServer() {
		assert.Empty(t, out, "only rank 0 reports")
		return
	}
	var rep fleet.MeshReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, "ok", string(rep.Status))
	assert.Len(t, rep.Hosts, 2)
	assert.Equal(t, 1, rep.Rounds)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	assert.Empty(t, r.Error)
	assert.Greater(t, r.Gbps, 0.0)
	require.Len(t, r.Devices, 1)
	assert.Equal(t, labtest.Device(), r.Devices[0].Name)
	require.NotNil(t, rep.Matrix[0][1])
	assert.InDelta(t, r.Gbps, *rep.Matrix[0][1], 1e-9)
}

// TestLab2HostFleetProve runs `erdmakit fleet prove` across the lab's two
// VMs, one rank each, the mesh over their real rxe0 devices: the mesh
// stage tests the pair with real RDMA and blames neither host, the NCCL
// stage says nccl-tests is not there, and every culprit comes from the
// doctor (a Soft-RoCE VM is no eRDMA instance), with the doctor's fix.
func TestLab2HostFleetProve(t *testing.T) {
	labtest.Require2Host(t)
	rank, rdv := "1", labtest.Peer()
	if labtest.IsServer() {
		rank, rdv = "0", labtest.IP()
	}
	code, out, stderr := runCLI("fleet", "prove", "--rank", rank, "--ranks", "2",
		"--rendezvous", fmt.Sprintf("%s:18730", rdv), "-p", "18740", "-d", labtest.Device(),
		"-D", "1s", "--warmup", "300ms", "--cooldown", "300ms", "--join-timeout", "90s", "--timeout", "90s",
		"--nccl-binary", "/nonexistent/all_reduce_perf", "--json")
	if !labtest.IsServer() {
		require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", out, stderr)
		assert.Empty(t, out, "only rank 0 reports")
		return
	}
	require.Less(t, code, ExitUnknown, "stdout: %s\nstderr: %s", out, stderr)
	var p fleet.Proof
	require.NoError(t, json.Unmarshal([]byte(out), &p), out)
	t.Logf("verdict %s; stages %+v", p.Verdict, p.Stages)
	require.Len(t, p.Stages, 3)
	assert.Equal(t, "ok", string(p.Stages[1].Status), "mesh: %+v", p.Stages[1])
	require.NotNil(t, p.Mesh)
	require.Len(t, p.Mesh.Results, 1)
	r := p.Mesh.Results[0]
	assert.Empty(t, r.Error)
	assert.Greater(t, r.Gbps, 0.0)
	require.Len(t, r.Devices, 1)
	assert.Equal(t, labtest.Device(), r.Devices[0].Name)
	assert.Equal(t, "skip", string(p.Stages[2].Status))
	assert.Contains(t, p.Stages[2].Summary, "not found")
	assert.Nil(t, p.NCCL)
	for _, c := range p.Culprits {
		assert.Equal(t, []string{"doctor"}, c.Stages, "%+v", c)
		assert.NotEmpty(t, c.Fix, "%+v", c)
	}
	assert.Equal(t, code, p.Exit())
}

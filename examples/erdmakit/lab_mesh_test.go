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

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/nccl"
)

// TestNCCLEnvFromRecordedHost: `nccl env` reads the host itself (here a
// recorded one), no inventory file needed.
func TestNCCLEnvFromRecordedHost(t *testing.T) {
	code, out, stderr := runCLI("nccl", "env", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "export NCCL_IB_HCA==erdma_0:1,erdma_1:1\n")
	assert.Contains(t, out, "export NCCL_IB_GID_INDEX=-1\n", "the two devices' GID indexes differ (1 and 2)")
	assert.Contains(t, out, "export NCCL_IB_ADDR_FAMILY=AF_INET\n")
	assert.Contains(t, out, "export NCCL_SOCKET_IFNAME=eth0\n")

	code, out, stderr = runCLI("nccl", "env", "--root", hostDir("gn8is-single"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "export NCCL_IB_GID_INDEX=1\n")

	code, out, _ = runCLI("nccl", "env", "--root", hostDir("no-erdma-driver"))
	assert.Equal(t, ExitWarn, code)
	assert.Contains(t, out, "no eRDMA device")
}

// TestNCCLEnvGraphFile: on the two-NIC recorded host `nccl env --graph-file`
// writes the graph for its 8 GPUs and exports it; on a one-NIC host it
// writes nothing and says why.
func TestNCCLEnvGraphFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nccl-graph.xml")
	code, out, stderr := runCLI("nccl", "env", "--root", hostDir("ebmgn8is-healthy"), "--graph-file", p)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "export NCCL_GRAPH_FILE="+p+"\n")
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	g, err := nccl.ParseGraph(context.Background(), f)
	require.NoError(t, err)
	assert.Equal(t, 8, g.GPUCount())
	assert.Equal(t, []int{0, 1}, g.NetDevs())

	code, out, _ = runCLI("nccl", "env", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code)
	assert.NotContains(t, out, "NCCL_GRAPH_FILE=")
	assert.Contains(t, out, "# note: 2 eRDMA NICs (erdma_0, erdma_1) at equal distance")

	q := filepath.Join(t.TempDir(), "single.xml")
	code, out, _ = runCLI("nccl", "env", "--root", hostDir("gn8is-single"), "--graph-file", q)
	assert.Equal(t, ExitWarn, code)
	assert.Contains(t, out, "NCCL_GRAPH_FILE not set: 1 eRDMA device(s)")
	assert.NoFileExists(t, q)
}

// TestNCCLRunHostEnv: `nccl run --host-env` passes nccl env's advice and the
// graph to every rank; -x still wins; the graph needs ranks per host =
// its GPU count.
func TestNCCLRunHostEnv(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.xml")
	code, out, stderr := runCLI("nccl", "run", "--root", hostDir("ebmgn8is-healthy"), "--host-env", "--graph-file", p,
		"--hosts", "a:8,b:8", "-x", "NCCL_IB_ADDR_RANGE=10.0.0.0/8", "--dry-run")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "-mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO "+
		"-x NCCL_IB_ADDR_RANGE=10.0.0.0/8 -x NCCL_IB_HCA==erdma_0:1,erdma_1:1 -x NCCL_IB_GID_INDEX=-1 -x NCCL_IB_ADDR_FAMILY=AF_INET "+
		"-x NCCL_IB_ROCE_VERSION_NUM=2 -x NCCL_NET_GDR_LEVEL=SYS -x NCCL_GRAPH_FILE="+p+" -x LD_LIBRARY_PATH")
	assert.FileExists(t, p)

	code, _, stderr = runCLI("nccl", "run", "--root", hostDir("ebmgn8is-healthy"), "--host-env", "--graph-file", p,
		"--hosts", "a:2,b:2", "--ranks-per-host", "2", "--dry-run")
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "puts 8 GPUs in each channel but the command runs 2 ranks per host")

	code, _, stderr = runCLI("nccl", "run", "--graph-file", p, "--hosts", "a:8", "--dry-run")
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "go with --host-env")
}

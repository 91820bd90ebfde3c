package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNCCLEnvFromRecordedHost: `nccl env` reads the host itself (here a
// recorded one), no inventory file needed.
func TestNCCLEnvFromRecordedHost(t *testing.T) {
	code, out, stderr := runCLI("nccl", "env", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "export NCCL_IB_HCA=erdma_0,erdma_1\n")
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

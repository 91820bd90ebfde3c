package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostDir is what a test passes as --root for fixture host name: its
// archive, testdata/hosts/<name>.tar.gz (the CLI unpacks it, as it does a
// user's recording). A test that needs the tree unpacked uses fixture.Host.
func hostDir(name string) string {
	return filepath.Join("..", "..", "testdata", "hosts", name+".tar.gz")
}

func TestDevicesTable(t *testing.T) {
	code, out, stderr := runCLI("devices", "--root", hostDir("ebmgn8is-healthy"))
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "DEVICE   DRIVER  PCI           NUMA  TRANSPORT  PORT  STATE   LINK      NETDEV  IPV4              MTU   GID  UVERBS")
	assert.Contains(t, out, "erdma_0  erdma   0000:00:05.0  0     roce       1     ACTIVE  Ethernet  eth1    192.168.10.11/24  8500  1    uverbs0")
	assert.Contains(t, out, "erdma_1  erdma   0000:80:05.0  1     roce       1     ACTIVE  Ethernet  eth2    192.168.11.11/24  8500  2    uverbs1")
	assert.Contains(t, out, "memlock: unlimited")

	code, out, _ = runCLI("devices", "--root", hostDir("no-erdma-driver"))
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "No RDMA devices in")
	assert.Contains(t, out, "env_setup.sh --egs")
}

func TestDevicesJSON(t *testing.T) {
	code, out, stderr := runCLI("devices", "--json", "--root", hostDir("port-down-no-ip"))
	require.Equal(t, ExitOK, code, stderr)
	var inv erdma.Inventory
	require.NoError(t, json.Unmarshal([]byte(out), &inv))
	require.Len(t, inv.Devices, 2)
	assert.Equal(t, "DOWN", inv.Devices[1].Ports[0].State)
	assert.Equal(t, -1, inv.Devices[1].Ports[0].RecommendedGIDIndex)
}

func TestDevicesBadRoot(t *testing.T) {
	code, _, stderr := runCLI("devices", "--root", "/nonexistent/host")
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "/nonexistent/host")
}

func TestRecordAndReplay(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.tar.gz")
	code, stdout, stderr := runCLI("record", "--root", hostDir("ebmgn8is-healthy"), "--out", out, "--redact")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "recorded 2 RDMA devices, 3 netdevs, 0 read errors, redacted to ")
	code, table, stderr := runCLI("devices", "--root", out)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, table, "erdma_1  erdma   0000:80:05.0  1     roce       1     ACTIVE  Ethernet  eth2    10.0.3.11/24  8500  2    uverbs1")

	code, _, stderr = runCLI("record", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "--out")
}

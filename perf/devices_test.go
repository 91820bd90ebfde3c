package perf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultDevices(t *testing.T) {
	mk := func(t *testing.T, devs map[string]string) string {
		root := t.TempDir()
		for name, driver := range devs {
			dir := filepath.Join(root, "sys/class/infiniband", name, "device")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			if driver != "" {
				require.NoError(t, os.Symlink("../../../../bus/pci/drivers/"+driver, filepath.Join(dir, "driver")))
			}
		}
		return root
	}
	tests := []struct {
		name    string
		devs    map[string]string
		want    []string
		wantErr string
	}{
		{"erdma devices by driver, not name", map[string]string{"erdma_1": "erdma", "erdma_0": "erdma", "mlx5_0": "mlx5_core", "erdma_x": ""}, []string{"erdma_0", "erdma_1"}, ""},
		{"the only device (lab rxe)", map[string]string{"rxe0": ""}, []string{"rxe0"}, ""},
		{"several non-eRDMA devices", map[string]string{"mlx5_0": "mlx5_core", "mlx5_1": "mlx5_core"}, nil, "name the devices to test with -d"},
		{"none", map[string]string{}, nil, "no RDMA devices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DefaultDevices(mk(t, tc.devs))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadCountersOfTheLabHost(t *testing.T) {
	c, err := ReadCounters("../testdata/hosts/lab-rxe", "rxe0", 1)
	require.NoError(t, err)
	if c == nil {
		t.Skip("the recorded lab host has no hw_counters")
	}
	_, ok := c["sent_pkts"]
	assert.True(t, ok, "rxe counts packets: %v", c)
	none, err := ReadCounters(t.TempDir(), "erdma_0", 1)
	require.NoError(t, err)
	assert.Nil(t, none, "a driver without hw_counters is not an error")
}

func TestReadCountersGarbled(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/class/infiniband/erdma_0/ports/1/hw_counters")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hw_tx_bytes_cnt"), []byte("12 34\n"), 0o644))
	_, err := ReadCounters(root, "erdma_0", 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hw_tx_bytes_cnt")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hw_tx_bytes_cnt"), []byte("1234\n"), 0o644))
	c, err := ReadCounters(root, "erdma_0", 1)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"hw_tx_bytes_cnt": 1234}, c)
}

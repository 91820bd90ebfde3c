package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultDevices(t *testing.T) {
	// mk lays out devices as the kernel does: sys/class/infiniband/<dev>/device
	// is a link to the PCI function, whose driver link names the driver.
	mk := func(t *testing.T, devs map[string]string) string {
		root := t.TempDir()
		fn := 0
		for name, driver := range devs {
			fn++
			pci := fmt.Sprintf("0000:00:%02x.0", fn)
			pdir := filepath.Join(root, "sys/devices/pci0000:00", pci)
			require.NoError(t, os.MkdirAll(pdir, 0o755))
			if driver != "" {
				require.NoError(t, os.Symlink("../../../bus/pci/drivers/"+driver, filepath.Join(pdir, "driver")))
			}
			dir := filepath.Join(root, "sys/class/infiniband", name)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.Symlink("../../../devices/pci0000:00/"+pci, filepath.Join(dir, "device")))
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
			got, err := DefaultDevices(t.Context(), mk(t, tc.devs))
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

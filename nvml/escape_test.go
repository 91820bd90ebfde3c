package nvml

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadersNeverLeaveTheRoot: the GPUDirect files and PCI attributes of
// a recorded host are read through its root; links out give nothing.
func TestReadersNeverLeaveTheRoot(t *testing.T) {
	const canary = "CANARY-nvml-outside"
	base, err := hostfs.PlantCanaries(t.TempDir(), 16, []byte(canary))
	require.NoError(t, err)
	for _, at := range []string{"sys/module/nvidia_peermem/version", "sys/devices/pci0000:00/0000:00:05.0/numa_node"} {
		for _, e := range hostfs.EscapeLayouts(at, filepath.Join(base, hostfs.CanaryName)) {
			t.Run(at+"/"+e.Name, func(t *testing.T) {
				root, err := os.MkdirTemp(base, "root-")
				require.NoError(t, err)
				require.NoError(t, e.Materialize(root))
				b, err := os.ReadFile(filepath.Join(root, at))
				require.NoError(t, err)
				require.Equal(t, canary, string(b), "the layout escapes for the kernel")
				require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/bus/pci/devices"), 0o755))
				require.NoError(t, os.Symlink("../../../devices/pci0000:00/0000:00:05.0", filepath.Join(root, "sys/bus/pci/devices/0000:00:05.0")))

				g := ReadGDR(t.Context(), root, "")
				out, err := json.Marshal(g)
				require.NoError(t, err)
				assert.NotContains(t, string(out), canary)
				p, err := ReadPCIPath(t.Context(), root, "0000:00:05.0")
				require.NoError(t, err)
				assert.Equal(t, -1, p.NUMANode, "numa_node through an escaping link is not read")
				_, ok := sysfsNUMANode(t.Context(), root, "0000:00:05.0")
				assert.False(t, ok)
			})
		}
	}
}

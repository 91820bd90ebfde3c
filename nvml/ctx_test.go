package nvml

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// pciTree is a root with one PCI function, 0000:00:05.0, linked from
// sys/bus/pci/devices as in sysfs, and the GPUDirect RDMA files of a host
// with nvidia_peermem loaded.
func pciTree(t *testing.T) string {
	return tree(t, map[string]string{
		"proc/sys/kernel/osrelease":                         "6.8.0-45-generic\n",
		"sys/module/nvidia/taint":                           "O\n",
		"sys/module/nvidia/version":                         "570.133.20\n",
		"sys/module/nvidia_peermem/version":                 "570.133.20\n",
		"sys/devices/pci0000:00/0000:00:05.0/numa_node":     "0\n",
		"sys/devices/pci0000:00/0000:00:05.0/local_cpulist": "0-15\n",
		"sys/bus/pci/devices/0000:00:05.0":                  "-> ../../../devices/pci0000:00/0000:00:05.0",
	})
}

// TestReadersReturnPromptlyOnAFIFO: issue 26 item 4. Each reader of a
// host root, with a FIFO where a file should be and a short deadline,
// returns at once and its answer names the FIFO.
func TestReadersReturnPromptlyOnAFIFO(t *testing.T) {
	nic := []NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}}
	for _, tc := range []struct {
		name, fifo string
		read       func(ctx context.Context, root string) string
	}{
		{"ReadGDR", "sys/module/nvidia_peermem/version", func(ctx context.Context, root string) string {
			return strings.Join(ReadGDR(ctx, root, "570.133.20").Evidence, "\n")
		}},
		{"ReadDMABUF", "proc/sys/kernel/osrelease", func(ctx context.Context, root string) string {
			return strings.Join(ReadDMABUF(ctx, root).Evidence, "\n")
		}},
		{"ComputeTopology", "sys/devices/pci0000:00/0000:00:05.0/numa_node", func(ctx context.Context, root string) string {
			return strings.Join(ComputeTopology(ctx, root, nil, nic).Errors, "\n")
		}},
		{"ReadPCIPath", "sys/devices/pci0000:00/0000:00:05.0/local_cpulist", func(ctx context.Context, root string) string {
			_, err := ReadPCIPath(ctx, root, "0000:00:05.0")
			if err == nil {
				return ""
			}
			return err.Error()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := pciTree(t)
			fixture.FIFO(t, root, tc.fifo)
			got := fixture.Promptly(t, func(ctx context.Context) string { return tc.read(ctx, root) })
			assert.Contains(t, got, filepath.Base(tc.fifo), "the answer names the FIFO")
			assert.Contains(t, got, "FIFO")
		})
	}
}

// TestReadersGiveUpWhenCtxEnds: with a context that has ended, no reader
// answers as if the files were absent: each says it was cut short.
func TestReadersGiveUpWhenCtxEnds(t *testing.T) {
	root := pciTree(t)
	require.True(t, ReadGDR(t.Context(), root, "570.133.20").Ready, "the tree is ready when read in full")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	g := ReadGDR(ctx, root, "570.133.20")
	assert.False(t, g.Ready)
	assert.Contains(t, g.Missing, "context canceled")
	assert.Contains(t, g.Missing, root)

	d := ReadDMABUF(ctx, root)
	assert.Equal(t, SupportUnknown, d.Supported)
	assert.Contains(t, strings.Join(d.Missing, "\n"), "context canceled")

	_, err := ReadPCIPath(ctx, root, "0000:00:05.0")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, root)

	topo := ComputeTopology(ctx, root, nil, []NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}})
	assert.Contains(t, strings.Join(topo.Errors, "\n"), "context canceled")

	assert.Empty(t, RecordPaths(ctx, root, &Snapshot{}))
}

package nvml

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pciPath(rel string, numa int) PCIPath {
	p, err := parsePCIDevicePath(rel)
	if err != nil {
		panic(err)
	}
	p.NUMANode = numa
	return p
}

func TestDistance(t *testing.T) {
	const (
		sw     = "devices/pci0000:16/0000:16:01.0/0000:17:00.0"
		nested = sw + "/0000:18:02.0/0000:20:00.0"
	)
	gpu := pciPath(sw+"/0000:18:00.0/0000:19:00.0", 0)
	for _, tc := range []struct {
		name   string
		a, b   PCIPath
		single bool
		want   Link
	}{
		{"same device", gpu, gpu, false, smitopo.LinkSelf},
		{"same switch", gpu, pciPath(sw+"/0000:18:01.0/0000:1a:00.0", 0), false, smitopo.LinkPIX},
		{"nested switch", gpu, pciPath(nested+"/0000:21:00.0/0000:22:00.0", 0), false, smitopo.LinkPXB},
		{"same host bridge, other root port", gpu, pciPath("devices/pci0000:16/0000:16:02.0/0000:30:00.0/0000:31:00.0/0000:32:00.0", 0), false, smitopo.LinkPHB},
		{"same root bus, no bridges", pciPath("devices/pci0000:00/0000:00:07.0", 0), pciPath("devices/pci0000:00/0000:00:05.0", 0), false, smitopo.LinkPHB},
		{"other host bridge, same NUMA", gpu, pciPath("devices/pci0000:00/0000:00:05.0", 0), false, smitopo.LinkNODE},
		{"other host bridge, other NUMA", gpu, pciPath("devices/pci0000:80/0000:80:05.0", 1), false, smitopo.LinkSYS},
		{"NUMA unknown on a two-node host", pciPath("devices/pci0000:16/0000:16:00.0", -1), pciPath("devices/pci0000:80/0000:80:05.0", -1), false, smitopo.LinkSYS},
		{"NUMA unknown on a one-node host", pciPath("devices/pci0000:16/0000:16:00.0", -1), pciPath("devices/pci0000:80/0000:80:05.0", -1), true, smitopo.LinkNODE},
		{"one NUMA unknown", gpu, pciPath("devices/pci0000:80/0000:80:05.0", -1), true, smitopo.LinkSYS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Distance(tc.a, tc.b, tc.single))
			assert.Equal(t, tc.want, Distance(tc.b, tc.a, tc.single), "symmetric")
		})
	}
}

func TestLinkRankAndMeaning(t *testing.T) {
	order := []Link{smitopo.LinkSelf, "NV18", smitopo.LinkPIX, smitopo.LinkPXB, smitopo.LinkPHB, smitopo.LinkNODE, smitopo.LinkSYS, "C2C?"}
	for i := 1; i < len(order); i++ {
		assert.Less(t, order[i-1].Rank(), order[i].Rank(), "%s before %s", order[i-1], order[i])
	}
	assert.Equal(t, 18, Link("NV18").NVLinks())
	assert.Equal(t, 0, Link("NVx").NVLinks())
	assert.True(t, smitopo.LinkPIX.GDRByDefault())
	assert.True(t, smitopo.LinkPXB.GDRByDefault())
	assert.False(t, smitopo.LinkPHB.GDRByDefault())
	assert.False(t, smitopo.LinkSYS.GDRByDefault())
	assert.Contains(t, smitopo.LinkSYS.NCCLMeaning(), "NCCL_NET_GDR_LEVEL=SYS")
	assert.Contains(t, smitopo.LinkNODE.NCCLMeaning(), "NCCL_NET_GDR_LEVEL=PHB")
	assert.Contains(t, smitopo.LinkPIX.NCCLMeaning(), "uses GPUDirect RDMA")
}

func healthyNICs() []NIC {
	return []NIC{{Name: "erdma_0", PCIAddress: "0000:00:05.0"}, {Name: "erdma_1", PCIAddress: "0000:80:05.0"}}
}

func fixtureGPUs(t *testing.T, host string) []GPU {
	t.Helper()
	lib, err := ForRoot(t.Context(), hostRoot(t, host))
	require.NoError(t, err)
	g, err := ReadGPUs(t.Context(), lib, hostRoot(t, host))
	require.NoError(t, err)
	return g.GPUs
}

func TestComputeTopologyHealthy(t *testing.T) {
	topo := ComputeTopology(t.Context(), hostRoot(t, "ebmgn8is-healthy"), fixtureGPUs(t, "ebmgn8is-healthy"), healthyNICs())
	require.Empty(t, topo.Errors)
	m := &topo.Matrix
	require.Len(t, m.Endpoints, 10)
	for _, tc := range []struct {
		a, b string
		want Link
	}{
		{"GPU0", "GPU0", smitopo.LinkSelf}, {"GPU0", "GPU1", smitopo.LinkPIX}, {"GPU0", "GPU2", smitopo.LinkNODE}, {"GPU0", "GPU4", smitopo.LinkSYS},
		{"GPU0", "NIC0", smitopo.LinkNODE}, {"GPU3", "erdma_0", smitopo.LinkNODE}, {"GPU0", "erdma_1", smitopo.LinkSYS},
		{"GPU4", "erdma_1", smitopo.LinkNODE}, {"GPU7", "NIC0", smitopo.LinkSYS}, {"NIC0", "NIC1", smitopo.LinkSYS},
	} {
		got, ok := m.Link(tc.a, tc.b)
		require.True(t, ok, "%s-%s", tc.a, tc.b)
		assert.Equal(t, tc.want, got, "%s-%s", tc.a, tc.b)
	}
	assert.Equal(t, "0-31,64-95", m.Endpoints[0].CPUAffinity)
	assert.Equal(t, "1", m.Endpoints[7].NUMAAffinity)
	assert.Equal(t, "erdma_1", m.Endpoints[9].Name)
	require.Len(t, topo.Nearest, 8)
	for _, n := range topo.Nearest {
		want := "erdma_0"
		if n.GPU >= 4 {
			want = "erdma_1"
		}
		assert.Equal(t, want, n.NIC, "GPU%d", n.GPU)
		assert.Equal(t, smitopo.LinkNODE, n.Distance)
		assert.False(t, n.GDRByDefault)
	}
}

func TestComputeTopologyVM(t *testing.T) {
	topo := ComputeTopology(t.Context(), hostRoot(t, "gn8is-single"), fixtureGPUs(t, "gn8is-single"), healthyNICs()[:1])
	require.Empty(t, topo.Errors)
	require.Len(t, topo.Nearest, 2)
	assert.Equal(t, smitopo.LinkPHB, topo.Nearest[0].Distance)
	assert.Contains(t, topo.Nearest[0].NCCL, "NCCL_NET_GDR_LEVEL=PHB")
}

func TestComputeTopologyMissingDevices(t *testing.T) {
	gpus := fixtureGPUs(t, "ebmgn8is-healthy")[:2]
	gpus[1].PCIAddress = "0000:55:00.0"
	topo := ComputeTopology(t.Context(), hostRoot(t, "ebmgn8is-healthy"), gpus, []NIC{{Name: "erdma_9", PCIAddress: "0000:00:09.0"}, {Name: "erdma_0", PCIAddress: "0000:00:05.0"}})
	require.Len(t, topo.Errors, 2)
	assert.Contains(t, topo.Errors[0], "GPU1")
	assert.ErrorContains(t, errorsJoin(topo.Errors), "PCI device not found")
	l, _ := topo.Matrix.Link("GPU1", "NIC1")
	assert.Equal(t, Link(""), l)
	require.Len(t, topo.Nearest, 1, "only GPU0 can be placed")
	assert.Equal(t, "erdma_0", topo.Nearest[0].NIC)
}

func errorsJoin(s []string) error { return &joined{strings.Join(s, "; ")} }

type joined struct{ s string }

func (j *joined) Error() string { return j.s }

func TestReadPCIPath(t *testing.T) {
	p, err := ReadPCIPath(t.Context(), hostRoot(t, "ebmgn8is-healthy"), "00000000:1A:00.0")
	require.NoError(t, err)
	assert.Equal(t, PCIPath{Address: "0000:1a:00.0", HostBridge: "pci0000:16",
		Chain:    []string{"0000:16:01.0", "0000:17:00.0", "0000:18:01.0", "0000:1a:00.0"},
		NUMANode: 0, CPUList: "0-31,64-95"}, p)
	assert.Equal(t, []string{"0000:17:00.0"}, p.switches())

	// No sys/bus/pci/devices link: found by walking sys/devices.
	root := tree(t, map[string]string{"sys/devices/pci0000:00/0000:00:05.0/numa_node": "-1\n"})
	p, err = ReadPCIPath(t.Context(), root, "0000:00:05.0")
	require.NoError(t, err)
	assert.Equal(t, -1, p.NUMANode)

	// A link leaving sys, garbage numa_node, a path that is not PCI.
	root = tree(t, map[string]string{
		"sys/devices/pci0000:00/0000:00:06.0/numa_node":     "zero\n",
		"sys/devices/platform/0000:00:07.0/numa_node":       "0\n",
		"sys/devices/pci0000:00/0000:00:08.0/virtio/x":      "",
		"sys/devices/pci0000:00/0000:00:09.0/local_cpulist": "0-3\n",
	})
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys/bus/pci/devices"), 0o755))
	require.NoError(t, os.Symlink("../../../../../etc", filepath.Join(root, "sys/bus/pci/devices/0000:00:0a.0")))
	require.NoError(t, os.Symlink("../../../devices/platform/0000:00:07.0", filepath.Join(root, "sys/bus/pci/devices/0000:00:07.0")))
	require.NoError(t, os.Symlink("/sys/devices/pci0000:00/0000:00:09.0", filepath.Join(root, "sys/bus/pci/devices/0000:00:09.0")))
	_, err = ReadPCIPath(t.Context(), root, "0000:00:0a.0")
	assert.ErrorContains(t, err, "leaves sys")
	_, err = ReadPCIPath(t.Context(), root, "0000:00:06.0")
	assert.ErrorContains(t, err, "numa_node")
	_, err = ReadPCIPath(t.Context(), root, "0000:00:07.0")
	assert.ErrorContains(t, err, "not a PCI device path")
	_, err = ReadPCIPath(t.Context(), root, "0000:00:0b.0")
	assert.ErrorIs(t, err, ErrNoPCIDevice)
	p, err = ReadPCIPath(t.Context(), root, "0000:00:09.0")
	require.NoError(t, err, "absolute links resolve inside the root")
	assert.Equal(t, "0-3", p.CPUList)
}

func FuzzPCIDevicePath(f *testing.F) {
	for _, s := range []string{
		"devices/pci0000:16/0000:16:01.0/0000:17:00.0/0000:18:00.0/0000:19:00.0",
		"devices/pci0000:00/0000:00:05.0",
		"devices/pci0000:9a/0000:9a:01.0/0000:9b:00.0/0000:9c:01.0/0000:9e:00.0",
	} {
		f.Add(s, "devices/pci0000:00/0000:00:05.0", 0, 1)
	}
	f.Fuzz(func(t *testing.T, a, b string, na, nb int) {
		pa, err := parsePCIDevicePath(a)
		if err != nil {
			return
		}
		if len(pa.Chain) == 0 || pa.Address != pa.Chain[len(pa.Chain)-1] {
			t.Fatalf("%q: chain %v, address %q", a, pa.Chain, pa.Address)
		}
		pb, err := parsePCIDevicePath(b)
		if err != nil {
			return
		}
		pa.NUMANode, pb.NUMANode = na, nb
		for _, single := range []bool{false, true} {
			ab, ba := Distance(pa, pb, single), Distance(pb, pa, single)
			if ab != ba || ab.Rank() > smitopo.LinkSYS.Rank() {
				t.Fatalf("%q/%q: %s vs %s", a, b, ab, ba)
			}
		}
	})
}

// TestComputedMatrixParses: our own computed matrix prints in nvidia-smi's
// format, which smitopo.Parse reads back.
func TestComputedMatrixParses(t *testing.T) {
	topo := ComputeTopology(t.Context(), hostRoot(t, "ebmgn8is-healthy"), fixtureGPUs(t, "ebmgn8is-healthy"), healthyNICs())
	var buf bytes.Buffer
	require.NoError(t, topo.Matrix.WriteText(&buf))
	again, err := smitopo.Parse(context.Background(), &buf)
	require.NoError(t, err, buf.String())
	assert.Equal(t, topo.Matrix.Links, again.Links)
	assert.Equal(t, "erdma_1", again.Endpoints[9].Name)
}

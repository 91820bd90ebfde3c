package nccl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func erdmaDev(name, netdev string, gid int) erdma.Device {
	return erdma.Device{Name: name, Driver: "erdma", ERDMA: true, NodeType: "1: CA", Transport: erdma.TransportRoCE,
		Netdev: netdev, Ports: []erdma.Port{{Number: 1, State: "ACTIVE", StateCode: 4, LinkLayer: "Ethernet", RecommendedGIDIndex: gid}}}
}

func netdev(name string, ips ...string) erdma.Netdev {
	return erdma.Netdev{Name: name, OperState: "up", MTU: 8500, IPv4: ips}
}

// host is a two-NIC eRDMA GPU host with peermem loaded and SYS distances.
func host() *erdma.Inventory {
	return &erdma.Inventory{
		Devices: []erdma.Device{erdmaDev("erdma_0", "eth1", 1), erdmaDev("erdma_1", "eth2", 1),
			{Name: "mlx5_0", Driver: "mlx5_core", Transport: erdma.TransportRoCE}},
		Netdevs: []erdma.Netdev{netdev("lo", "127.0.0.1/8"), netdev("eth0", "10.0.0.5/24"),
			netdev("eth1", "10.0.1.5/24"), netdev("eth2", "10.0.2.5/24")},
		Memlock: &erdma.Limit{Unlimited: true},
		GPU: &erdma.GPUInfo{Available: true, Count: 2, GDRPath: "nvidia_peermem",
			Nearest: []erdma.GPUNIC{{GPU: 0, Device: "erdma_0", Distance: "SYS"}, {GPU: 1, Device: "erdma_1", Distance: "SYS"}}},
	}
}

func TestAdviseEnv(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*erdma.Inventory)
		opts     EnvOptions
		want     map[string]string // "" value: must be unset
		warnings []string          // substrings, one warning each
	}{
		{"two NICs agreeing on the GID index", nil, EnvOptions{},
			map[string]string{"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "=erdma_0:1,erdma_1:1", "NCCL_IB_GID_INDEX": "1",
				"NCCL_NET_GDR_LEVEL": "SYS", "NCCL_IB_ADDR_RANGE": ""}, nil},
		{"two NICs with different GID indexes", func(i *erdma.Inventory) { i.Devices[0].Ports[0].RecommendedGIDIndex = 2 }, EnvOptions{},
			map[string]string{"NCCL_IB_GID_INDEX": "-1", "NCCL_IB_ADDR_FAMILY": "AF_INET", "NCCL_IB_ROCE_VERSION_NUM": "2",
				"NCCL_IB_ADDR_RANGE": "10.0.0.0/22"}, nil},
		// NCCL_IB_GID_INDEX=-1 exists from NCCL 2.21.5 (ncclIbGetGidIndex,
		// src/transport/net_ib.cc of v2.21.5-1; v2.20.5-1 passes the number
		// to ibv_query_gid as it is).
		{"different indexes, NCCL 2.21.5", func(i *erdma.Inventory) { i.Devices[0].Ports[0].RecommendedGIDIndex = 2 },
			EnvOptions{NCCL: []NCCLInstall{{Version: "2.21.5", Path: "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"}}},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1,erdma_1:1", "NCCL_IB_GID_INDEX": "-1", "NCCL_IB_ADDR_FAMILY": "AF_INET"}, nil},
		{"different indexes, NCCL 2.20.5: one index, the devices that share it", func(i *erdma.Inventory) { i.Devices[0].Ports[0].RecommendedGIDIndex = 2 },
			EnvOptions{NCCL: []NCCLInstall{{Version: "2.20.5", Path: "usr/lib/x86_64-linux-gnu/libnccl.so.2.20.5"}}},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1", "NCCL_IB_GID_INDEX": "2", "NCCL_IB_ADDR_FAMILY": "", "NCCL_IB_ADDR_RANGE": ""},
			[]string{"NCCL 2.20.5 takes one NCCL_IB_GID_INDEX for every device and the eRDMA devices' IPv4 GIDs differ (erdma_0: 2, erdma_1: 1): NCCL_IB_HCA leaves out erdma_1; use NCCL >= 2.21.5"}},
		{"same index, old NCCL: nothing to say", nil,
			EnvOptions{NCCL: []NCCLInstall{{Version: "2.18.3", Path: "usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3"}}},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1,erdma_1:1", "NCCL_IB_GID_INDEX": "1"}, nil},
		{"different indexes, same subnet", func(i *erdma.Inventory) {
			i.Devices[0].Ports[0].RecommendedGIDIndex = 2
			i.Netdevs[2].IPv4 = []string{"192.168.7.5/24"}
			i.Netdevs[3].IPv4 = []string{"192.168.7.6/24"}
		}, EnvOptions{}, map[string]string{"NCCL_IB_ADDR_RANGE": "192.168.7.0/24"}, nil},
		{"one NIC, no GPU facts", func(i *erdma.Inventory) { i.Devices = i.Devices[:1]; i.GPU = nil }, EnvOptions{},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1", "NCCL_IB_GID_INDEX": "1", "NCCL_NET_GDR_LEVEL": ""}, []string{"NCCL_NET_GDR_LEVEL not decided"}},
		{"no GPU facts, peermem module loaded", func(i *erdma.Inventory) {
			i.GPU = &erdma.GPUInfo{Reason: "libnvidia-ml not found"}
			i.Modules = []erdma.Module{{Name: "nvidia_peermem", Loaded: true}}
		}, EnvOptions{}, map[string]string{"NCCL_NET_GDR_LEVEL": "SYS"}, nil},
		{"peermem not loaded", func(i *erdma.Inventory) { i.GPU.GDRPath = "" }, EnvOptions{},
			map[string]string{"NCCL_NET_GDR_LEVEL": ""}, []string{"modprobe nvidia_peermem"}},
		{"GPU close to the NIC", func(i *erdma.Inventory) { i.GPU.Nearest = []erdma.GPUNIC{{GPU: 0, Device: "erdma_0", Distance: "PIX"}} }, EnvOptions{},
			map[string]string{"NCCL_NET_GDR_LEVEL": ""}, nil},
		{"ncclog.GDR off", nil, EnvOptions{GDR: GDROff}, map[string]string{"NCCL_NET_GDR_LEVEL": ""}, nil},
		{"ncclog.GDR forced without peermem", func(i *erdma.Inventory) { i.GPU = nil }, EnvOptions{GDR: GDROn},
			map[string]string{"NCCL_NET_GDR_LEVEL": "SYS"}, []string{"without a GPUDirect RDMA path"}},
		{"inactive port dropped", func(i *erdma.Inventory) { i.Devices[1].Ports[0].State = "DOWN"; i.Devices[1].Ports[0].StateCode = 1 }, EnvOptions{},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1", "NCCL_IB_GID_INDEX": "1"}, []string{"erdma_1 has no ACTIVE port"}},
		{"iWARP device dropped", func(i *erdma.Inventory) {
			i.Devices[0].Transport = erdma.TransportIWARP
			i.Devices[0].NodeType = "4: RNIC"
		}, EnvOptions{},
			map[string]string{"NCCL_IB_HCA": "=erdma_1:1"}, []string{"compat_mode=1"}},
		{"no GID for the IPv4", func(i *erdma.Inventory) { i.Devices = i.Devices[:1]; i.Devices[0].Ports[0].RecommendedGIDIndex = -1 }, EnvOptions{},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1", "NCCL_IB_GID_INDEX": ""}, []string{"no RoCE v2 GID"}},
		{"no eRDMA at all", func(i *erdma.Inventory) { i.Devices = i.Devices[2:] }, EnvOptions{},
			map[string]string{"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_HCA": "", "NCCL_IB_GID_INDEX": "", "NCCL_NET_GDR_LEVEL": ""},
			[]string{"fall back to sockets"}},
		{"no eth0", func(i *erdma.Inventory) { i.Netdevs = i.Netdevs[2:] }, EnvOptions{},
			map[string]string{"NCCL_SOCKET_IFNAME": "eth1"}, nil},
		{"interface override", nil, EnvOptions{SocketIfname: "bond0"}, map[string]string{"NCCL_SOCKET_IFNAME": "bond0"}, nil},
		{"crashing NCCL and low memlock", func(i *erdma.Inventory) { i.Memlock = &erdma.Limit{Soft: 64 << 10, Hard: 64 << 10} },
			EnvOptions{NCCL: []NCCLInstall{{Version: "2.28.9", Path: "usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9"}, {Version: "2.21.5", Path: "x"}}},
			map[string]string{"NCCL_IB_HCA": "=erdma_0:1,erdma_1:1"}, []string{"64 KiB", "NCCL 2.28.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := host()
			if tt.edit != nil {
				tt.edit(inv)
			}
			a := AdviseEnv(inv, tt.opts)
			for name, want := range tt.want {
				got, ok := a.Get(name)
				if want == "" {
					assert.False(t, ok, "%s should be unset, is %q", name, got)
					continue
				}
				assert.Equal(t, want, got, name)
			}
			for _, v := range a.Vars {
				assert.NotEmpty(t, v.Reason, v.Name)
			}
			require.Len(t, a.Warnings, len(tt.warnings), "%q", a.Warnings)
			for i, w := range tt.warnings {
				assert.Contains(t, a.Warnings[i], w)
			}
		})
	}
	assert.NotEmpty(t, AdviseEnv(nil, EnvOptions{}).Warnings)
}

// TestAdviseEnvGIDAutoNeedsNCCL2215: with the NCCL version unknown, -1 is
// advised with its requirement said (reason and a note).
func TestAdviseEnvGIDAutoNeedsNCCL2215(t *testing.T) {
	inv := host()
	inv.Devices[0].Ports[0].RecommendedGIDIndex = 2
	a := AdviseEnv(inv, EnvOptions{})
	v, _ := a.Get("NCCL_IB_GID_INDEX")
	require.Equal(t, "-1", v)
	for _, e := range a.Vars {
		if e.Name == "NCCL_IB_GID_INDEX" {
			assert.Contains(t, e.Reason, "needs NCCL >= 2.21.5")
		}
	}
	require.NotEmpty(t, a.Notes)
	assert.Contains(t, a.Notes[0], "NCCL_IB_GID_INDEX=-1 needs NCCL >= 2.21.5")
	assert.Contains(t, a.Notes[0], "erdma_0: 2, erdma_1: 1")

	// An old NCCL leaves one device: no graph file naming both.
	inv.GPU.Count = 8
	a = AdviseEnv(inv, EnvOptions{NCCL: []NCCLInstall{{Version: "2.20.5"}}, GraphFile: "/root/g.xml"})
	_, ok := a.Get("NCCL_GRAPH_FILE")
	assert.False(t, ok)
	assert.Contains(t, strings.Join(a.Warnings, "\n"), "NCCL_GRAPH_FILE not set: NCCL_IB_HCA==erdma_0:1 does not name every eRDMA NIC")
}

func TestAdviseEnvGDRThroughDMABUF(t *testing.T) {
	inv := host()
	inv.GPU.GDRPath, inv.GPU.DMABUF = "dmabuf", "yes"
	a := AdviseEnv(inv, EnvOptions{})
	v, ok := a.Get("NCCL_NET_GDR_LEVEL")
	require.True(t, ok, "ncclog.GDR through DMA-BUF needs no nvidia_peermem")
	assert.Equal(t, "SYS", v)
	assert.Contains(t, a.Vars[len(a.Vars)-1].Reason, "ready through DMA-BUF")

	inv.GPU.GDRPath, inv.GPU.DMABUF = "", "no"
	a = AdviseEnv(inv, EnvOptions{})
	_, ok = a.Get("NCCL_NET_GDR_LEVEL")
	assert.False(t, ok)
	require.NotEmpty(t, a.Warnings)
	assert.Contains(t, a.Warnings[0], "DMA-BUF no")
	assert.Contains(t, a.Warnings[0], "or DMA-BUF (kernel >= 5.12")

	// eRDMA: the provider registers no dma-buf, so the only way is the module.
	inv.GPU.DMABUFRefusedBy = []string{"erdma"}
	a = AdviseEnv(inv, EnvOptions{})
	require.NotEmpty(t, a.Warnings)
	assert.Contains(t, a.Warnings[0], "modprobe nvidia_peermem (again after every reboot) (DMA-BUF is no alternative: the erdma provider registers no dma-buf)")
	assert.NotContains(t, a.Warnings[0], "or DMA-BUF (kernel")
}

func TestEnvAdviceFormats(t *testing.T) {
	a := &EnvAdvice{Vars: []EnvVar{{"NCCL_IB_HCA", "erdma_0,erdma_1", "the devices"}, {"X", "a b", "quoted"}}, Warnings: []string{"w"}}
	assert.Equal(t, "# WARNING: w\n# the devices\nexport NCCL_IB_HCA=erdma_0,erdma_1\n# quoted\nexport X='a b'\n", a.Shell())
	assert.Equal(t, []string{"-x", "NCCL_IB_HCA=erdma_0,erdma_1", "-x", "X=a b"}, a.MPIRunArgs())
	assert.Equal(t, []Var{{"NCCL_IB_HCA", "erdma_0,erdma_1"}, {"X", "a b"}}, a.CommandVars())
}

func TestCrashingNCCL(t *testing.T) {
	for v, want := range map[string]bool{"2.28.7": true, "2.28.9+cuda12.9": true, "2.28.3": false, "2.29.7": false, "": false, "2.28.79": false} {
		assert.Equal(t, want, ncclog.CrashingNCCL(v), v)
	}
}

func TestDetectNCCL(t *testing.T) {
	root := t.TempDir()
	mk := func(p string, dir bool) {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if dir {
			require.NoError(t, os.MkdirAll(full, 0o755))
			return
		}
		require.NoError(t, os.WriteFile(full, nil, 0o644))
	}
	mk("usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9", false)
	mk("usr/lib/x86_64-linux-gnu/libnccl.so.2", false)
	mk("usr/lib/x86_64-linux-gnu/libnccl.so", false)
	mk("usr/local/lib/python3.10/dist-packages/nvidia_nccl_cu12-2.21.5.dist-info", true)
	mk("usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2", false)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/local/cuda/lib64"), 0o755))
	require.NoError(t, os.Symlink("/opt/nccl-2.29.7/lib/libnccl.so.2.29.7", filepath.Join(root, "usr/local/cuda/lib64/libnccl.so.2")))
	got := DetectNCCL(t.Context(), root)
	assert.Equal(t, []NCCLInstall{
		{Version: "2.29.7", Path: "opt/nccl-2.29.7/lib/libnccl.so.2.29.7"},
		{Version: "2.28.9", Path: "usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9"},
		{Version: "2.21.5", Path: "usr/local/lib/python3.10/dist-packages/nvidia_nccl_cu12-2.21.5.dist-info"},
	}, got)
	a := AdviseEnv(host(), EnvOptions{NCCL: got})
	require.Len(t, a.Warnings, 1)
	assert.True(t, strings.Contains(a.Warnings[0], "segfaults"))
	assert.Empty(t, DetectNCCL(t.Context(), filepath.Join(root, "nonexistent")))
}

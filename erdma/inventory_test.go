package erdma_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readFixture(t testing.TB, name string) *erdma.Inventory {
	t.Helper()
	inv, err := erdma.ReadInventory(context.Background(), erdma.RecordedHost(fixture.Host(t, name)), erdma.InventoryOptions{})
	require.NoError(t, err)
	return inv
}

func module(inv *erdma.Inventory, name string) erdma.Module {
	for _, m := range inv.Modules {
		if m.Name == name {
			return m
		}
	}
	return erdma.Module{}
}

func netdev(inv *erdma.Inventory, name string) erdma.Netdev {
	for _, n := range inv.Netdevs {
		if n.Name == name {
			return n
		}
	}
	return erdma.Netdev{}
}

// want is what a fixture's devices must read as.
type wantDev struct {
	name, pci, netdev, by, state, compat string
	numa, gid                            int
	transport                            erdma.Transport
}

func checkDevices(t *testing.T, inv *erdma.Inventory, want []wantDev) {
	t.Helper()
	require.Len(t, inv.Devices, len(want))
	for i, w := range want {
		d := inv.Devices[i]
		assert.Equal(t, w.name, d.Name)
		assert.Equal(t, "erdma", d.Driver)
		assert.True(t, d.ERDMA)
		assert.Equal(t, w.pci, d.PCIAddress)
		assert.Equal(t, erdma.ERDMAPCIID, d.PCIID)
		assert.Equal(t, w.numa, d.NUMANode)
		assert.Equal(t, w.transport, d.Transport)
		assert.Equal(t, w.compat, d.CompatMode)
		assert.Equal(t, w.netdev, d.Netdev, d.Name)
		assert.Equal(t, w.by, d.NetdevBy, d.Name)
		assert.Equal(t, fmt.Sprintf("uverbs%d", i), d.UVerbs)
		assert.True(t, d.UVerbsPresent)
		assert.Equal(t, "0.2.0", d.FWVer)
		require.Len(t, d.Ports, 1)
		p := d.Ports[0]
		assert.Equal(t, 1, p.Number)
		assert.Equal(t, w.state, p.State, d.Name)
		assert.Equal(t, "Ethernet", p.LinkLayer)
		assert.Equal(t, "100 Gb/sec (4X EDR)", p.Rate)
		assert.True(t, p.RateNominal, "eRDMA's rate file is hard-coded")
		assert.Equal(t, w.gid, p.RecommendedGIDIndex, d.Name)
		assert.NotEmpty(t, p.Counters)
	}
}

func TestReadInventoryFixtures(t *testing.T) {
	healthyDevs := []wantDev{
		{name: "erdma_0", pci: "0000:00:05.0", numa: 0, netdev: "eth1", by: "gid_attrs", state: "ACTIVE", compat: "Y", gid: 1, transport: erdma.TransportRoCE},
		{name: "erdma_1", pci: "0000:80:05.0", numa: 1, netdev: "eth2", by: "gid_attrs", state: "ACTIVE", compat: "Y", gid: 2, transport: erdma.TransportRoCE},
	}
	tests := []struct {
		host  string
		check func(t *testing.T, inv *erdma.Inventory)
	}{
		{"ebmgn8is-healthy", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, healthyDevs)
			assert.Equal(t, "0216:3eff:fe2f:3775", inv.Devices[0].NodeGUID)
			assert.Equal(t, "1: CA", inv.Devices[0].NodeType)
			// erdma_1 has a RoCE v1 entry for the same IPv4 at index 1: only
			// the v2 entry is recommended.
			g := inv.Devices[1].Ports[0].GIDs
			require.Len(t, g, 3)
			assert.Equal(t, erdma.GID{Index: 1, GID: "0000:0000:0000:0000:0000:ffff:c0a8:0b0b", IP: "192.168.11.11", Type: "IB/RoCE v1", Netdev: "eth2"}, g[1])
			assert.Equal(t, uint64(7340032000), inv.Devices[0].Ports[0].Counters["hw_tx_bytes_cnt"])
			assert.Contains(t, inv.Devices[0].Ports[0].Counters, "hw_bps_limit_drop_cnt")
			assert.Equal(t, "gpu-node-a", inv.Hostname)
			assert.Equal(t, "5.10.134-16.3.al8.x86_64", inv.Kernel)
			assert.True(t, module(inv, "erdma").Loaded)
			assert.True(t, module(inv, "nvidia_peermem").Loaded)
			assert.Equal(t, "535.161.08", module(inv, "nvidia").Version)
			assert.False(t, module(inv, "nv_peer_mem").Loaded)
			require.NotNil(t, inv.Memlock)
			assert.True(t, inv.Memlock.Unlimited)
			require.Len(t, inv.Tools, 6)
			assert.Equal(t, erdma.Tool{Name: "eadm", Path: "/usr/bin/eadm", Version: "0.2.37"}, inv.Tools[0])
			assert.Equal(t, 8500, netdev(inv, "eth1").MTU)
			assert.Equal(t, []string{"192.168.10.11/24"}, netdev(inv, "eth1").IPv4)
		}},
		{"gn8is-single", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, healthyDevs[:1])
		}},
		{"iwarp-mode", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, []wantDev{{name: "erdma_0", pci: "0000:00:05.0", numa: 0, netdev: "eth1", by: "mac",
				state: "ACTIVE", compat: "N", gid: -1, transport: erdma.TransportIWARP}})
			assert.Equal(t, "4: RNIC", inv.Devices[0].NodeType)
			assert.Equal(t, []erdma.GID{{Index: 0, GID: "0016:3e2f:3775:0000:0000:0000:0000:0000"}}, inv.Devices[0].Ports[0].GIDs)
		}},
		{"port-down-no-ip", func(t *testing.T, inv *erdma.Inventory) {
			want := append([]wantDev(nil), healthyDevs...)
			want[1].state, want[1].gid = "DOWN", -1
			checkDevices(t, inv, want)
			assert.Equal(t, 1, inv.Devices[1].Ports[0].StateCode)
			assert.Equal(t, "Disabled", inv.Devices[1].Ports[0].PhysState)
			assert.Equal(t, "down", netdev(inv, "eth2").OperState)
			assert.Empty(t, netdev(inv, "eth2").IPv4)
		}},
		{"no-erdma-driver", func(t *testing.T, inv *erdma.Inventory) {
			assert.Empty(t, inv.Devices)
			assert.False(t, module(inv, "erdma").Loaded)
			assert.False(t, module(inv, "ib_uverbs").Loaded)
			assert.Len(t, inv.Netdevs, 3)
			assert.Empty(t, inv.Tools[0].Path, "no eadm")
		}},
		{"no-peermem", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, healthyDevs)
			assert.True(t, module(inv, "nvidia").Loaded)
			assert.False(t, module(inv, "nvidia_peermem").Loaded)
		}},
		{"memlock-64k", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, healthyDevs)
			assert.Equal(t, &erdma.Limit{Soft: 65536, Hard: 65536}, inv.Memlock)
		}},
		{"mtu-mismatch", func(t *testing.T, inv *erdma.Inventory) {
			checkDevices(t, inv, healthyDevs)
			assert.Equal(t, 8500, netdev(inv, "eth1").MTU)
			assert.Equal(t, 1400, netdev(inv, "eth2").MTU)
		}},
	}
	// Every committed fixture has a case.
	require.Len(t, tests, len(hostgen.Fixtures()))
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			inv := readFixture(t, tc.host)
			assert.Empty(t, inv.Errors)
			assert.Equal(t, tc.host, filepath.Base(inv.Root))
			tc.check(t, inv)
		})
	}
}

func TestRecordedInstance(t *testing.T) {
	in, err := erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy")).RecordedInstance(t.Context())
	require.NoError(t, err)
	require.NotNil(t, in)
	assert.Equal(t, "ecs.ebmgn8is.32xlarge", in.Type)
	in, err = erdma.LiveHost().RecordedInstance(t.Context())
	assert.NoError(t, err)
	assert.Nil(t, in)
}

func TestReadInventoryBadRoot(t *testing.T) {
	_, err := erdma.ReadInventory(context.Background(), erdma.RecordedHost("/nonexistent/erdmakit"), erdma.InventoryOptions{})
	assert.ErrorContains(t, err, "/nonexistent/erdmakit")
	_, err = erdma.ReadInventory(context.Background(), erdma.Host{}, erdma.InventoryOptions{})
	assert.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = erdma.ReadInventory(ctx, erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy")), erdma.InventoryOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestReadCounters(t *testing.T) {
	h := erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy"))
	c, err := erdma.ReadCounters(t.Context(), h, "erdma_1", 1)
	require.NoError(t, err)
	assert.Len(t, c, 55)
	assert.Equal(t, uint64(7340032000+4096), c["hw_tx_bytes_cnt"])
	c, err = erdma.ReadCounters(t.Context(), h, "erdma_9", 1)
	assert.NoError(t, err, "no hw_counters is not an error")
	assert.Empty(t, c)
}

func TestOpenHost(t *testing.T) {
	h, c, err := erdma.OpenHost(t.Context(), "/")
	require.NoError(t, err)
	assert.True(t, h.Live())
	assert.NoError(t, c.Close())
	dir := fixture.Host(t, "gn8is-single")
	h, c, err = erdma.OpenHost(t.Context(), dir)
	require.NoError(t, err)
	assert.False(t, h.Live())
	assert.Equal(t, filepath.Join(dir, "sys/class/infiniband"), h.Path("sys/class/infiniband"))
	assert.NoError(t, c.Close())
	archive := fixture.Archive(t, "gn8is-single")
	h, c, err = erdma.OpenHost(t.Context(), archive)
	require.NoError(t, err)
	assert.False(t, h.Live())
	assert.Equal(t, archive, h.Source())
	assert.FileExists(t, h.Path("sys/class/infiniband/erdma_0/node_guid"))
	assert.NoError(t, c.Close())
	assert.NoDirExists(t, h.Root(), "Close removes the unpacked recording")
	_, _, err = erdma.OpenHost(t.Context(), "/nonexistent.tar.gz")
	assert.ErrorContains(t, err, "/nonexistent.tar.gz")
	_, _, err = erdma.OpenHost(t.Context(), "inventory_test.go")
	assert.ErrorContains(t, err, "neither a directory nor a .tar.gz")
}

func ExampleReadInventory() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	inv, err := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{SkipTools: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range inv.Devices {
		p := d.Ports[0]
		fmt.Printf("%s %s numa=%d %s port=%s netdev=%s (by %s) NCCL_IB_GID_INDEX=%d\n",
			d.Name, d.PCIAddress, d.NUMANode, d.Transport, p.State, d.Netdev, d.NetdevBy, p.RecommendedGIDIndex)
	}
	// Output:
	// erdma_0 0000:00:05.0 numa=0 roce port=ACTIVE netdev=eth1 (by gid_attrs) NCCL_IB_GID_INDEX=1
	// erdma_1 0000:80:05.0 numa=1 roce port=ACTIVE netdev=eth2 (by gid_attrs) NCCL_IB_GID_INDEX=2
}

func ExampleReadCounters() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	c, err := erdma.ReadCounters(context.Background(), h, "erdma_0", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(c), "counters; tx bytes:", c["hw_tx_bytes_cnt"], "bps-limit drops:", c["hw_bps_limit_drop_cnt"])
	// Output:
	// 55 counters; tx bytes: 7340032000 bps-limit drops: 0
}

// BenchmarkReadInventory reads the healthy 2-device fixture (tools from the
// recording, counters included).
func BenchmarkReadInventory(b *testing.B) {
	h := erdma.RecordedHost(fixture.Host(b, "ebmgn8is-healthy"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadInventoryDevices reads generated hosts with 2, 8 and 32
// devices and reports the cost per device.
func BenchmarkReadInventoryDevices(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			require.NoError(b, hostgen.Write(dir, hostgen.Host("bench", hostgen.ManyNICs(n))))
			h := erdma.RecordedHost(dir)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{})
				if err != nil || len(inv.Devices) != n {
					b.Fatal(err, len(inv.Devices))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// BenchmarkReadCounters is the exporter's hot path: one port's 55 counters.
func BenchmarkReadCounters(b *testing.B) {
	h := erdma.RecordedHost(fixture.Host(b, "ebmgn8is-healthy"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := erdma.ReadCounters(context.Background(), h, "erdma_0", 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadCountersUpstreamNames: the in-kernel driver's unprefixed names and
// ib_core's lifespan setting.
func TestReadCountersUpstreamNames(t *testing.T) {
	dir := t.TempDir()
	hc := filepath.Join(dir, "sys/class/infiniband/erdma_0/ports/1/hw_counters")
	require.NoError(t, os.MkdirAll(hc, 0o755))
	for name, v := range map[string]string{"tx_bytes_cnt": "4096\n", "rx_bps_limit_drop_cnt": "3\n", "lifespan": "10\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(hc, name), []byte(v), 0o644))
	}
	c, err := erdma.ReadCounters(t.Context(), erdma.RecordedHost(dir), "erdma_0", 1)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"tx_bytes_cnt": 4096, "rx_bps_limit_drop_cnt": 3}, c)

	require.NoError(t, os.WriteFile(filepath.Join(hc, "tx_bytes_cnt"), []byte("lots\n"), 0o644))
	c, err = erdma.ReadCounters(t.Context(), erdma.RecordedHost(dir), "erdma_0", 1)
	assert.ErrorContains(t, err, filepath.Join(hc, "tx_bytes_cnt"))
	assert.ErrorIs(t, err, erdma.ErrMalformed)
	assert.Equal(t, map[string]uint64{"rx_bps_limit_drop_cnt": 3}, c, "the good counters are still returned")
}

func ExampleOpenHost() {
	// "/" is this machine; a directory or a .tar.gz from `erdmakit record`
	// is a recorded host.
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/iwarp-mode.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	devs, errs, err := erdma.ReadDevices(context.Background(), h)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range devs {
		fmt.Println(d.Name, d.NodeType, d.Transport, "compat_mode="+d.CompatMode, len(errs), "errors")
	}
	// Output:
	// erdma_0 4: RNIC iwarp compat_mode=N 0 errors
}

// BenchmarkCounterReader is the exporter's polling path: zero allocations.
func BenchmarkCounterReader(b *testing.B) {
	c, err := erdma.OpenCounters(context.Background(), erdma.RecordedHost(fixture.Host(b, "ebmgn8is-healthy")), "erdma_0", 1)
	require.NoError(b, err)
	defer c.Close()
	m := map[string]uint64{}
	ctx := context.Background()
	require.NoError(b, c.Read(ctx, m))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Read(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.Names())), "ns/counter")
}

func TestCounterReader(t *testing.T) {
	c, err := erdma.OpenCounters(t.Context(), erdma.RecordedHost(fixture.Host(t, "ebmgn8is-healthy")), "erdma_0", 1)
	require.NoError(t, err)
	m := map[string]uint64{}
	require.NoError(t, c.Read(t.Context(), m))
	assert.Len(t, m, 55)
	allocs := testing.AllocsPerRun(10, func() { _ = c.Read(t.Context(), m) })
	assert.Zero(t, allocs)

	// An ended context stops the reads before the first counter.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	fresh := map[string]uint64{}
	err = c.Read(ctx, fresh)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "hw_counters/"+c.Names()[0])
	assert.Empty(t, fresh)

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "idempotent")
	assert.ErrorIs(t, c.Read(t.Context(), m), os.ErrClosed)
}

// TestRealKernelTreeLabRXE reads the lab's recording of a real kernel's
// ib_core tree (testdata/hosts/lab-rxe.tar.gz): Soft-RoCE is not eRDMA, and
// its GIDs and pairing read right.
func TestRealKernelTreeLabRXE(t *testing.T) {
	inv := readFixture(t, "lab-rxe")
	assert.Empty(t, inv.Errors)
	require.Len(t, inv.Devices, 1)
	d := inv.Devices[0]
	assert.Equal(t, "rxe0", d.Name)
	assert.False(t, d.ERDMA, "rxe is not eRDMA")
	assert.Empty(t, d.PCIAddress)
	assert.Equal(t, erdma.TransportRoCE, d.Transport)
	assert.Equal(t, "eth0", d.Netdev)
	assert.Equal(t, "uverbs0", d.UVerbs)
	require.Len(t, d.Ports, 1)
	assert.Equal(t, "ACTIVE", d.Ports[0].State)
	assert.False(t, d.Ports[0].RateNominal)
	assert.Equal(t, 1, d.Ports[0].RecommendedGIDIndex)
}

// TestLiveToolsFakePATH: versions parsed from the tools' own output, perftest's
// exit status 1 after --version tolerated, a hanging tool ended by the
// timeout (with its process group) and reported, a missing tool path-less.
func TestLiveToolsFakePATH(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"eadm":        "#!/bin/sh\necho 'version: r0.2.37'\n",
		"ofed_info":   "#!/bin/sh\necho 'MLNX_OFED_LINUX-5.4-3.6.8.1:'\n",
		"ib_write_bw": "#!/bin/sh\necho ' Version: 6.06'\nexit 1\n",
		"mpirun":      "#!/bin/sh\nsleep 60\n",
		"nvidia-smi":  "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2\nexit 9\n",
	}
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	start := time.Now()
	tools, err := erdma.LiveHost().Tools(context.Background())
	elapsed := time.Since(start)
	assert.Less(t, elapsed, erdma.ToolTimeout+10*time.Second, "the hanging mpirun is bounded")
	require.Len(t, tools, 6)
	byName := map[string]erdma.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	assert.Equal(t, "r0.2.37", byName["eadm"].Version)
	assert.Equal(t, "MLNX_OFED_LINUX-5.4-3.6.8.1", byName["ofed_info"].Version)
	assert.Equal(t, "6.06", byName["ib_write_bw"].Version)
	assert.Equal(t, filepath.Join(dir, "mpirun"), byName["mpirun"].Path)
	assert.Empty(t, byName["mpirun"].Version)
	assert.Empty(t, byName["all_reduce_perf"].Path)
	assert.Empty(t, byName["nvidia-smi"].Version)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mpirun")
	assert.Contains(t, err.Error(), "could not communicate with the NVIDIA driver")
}

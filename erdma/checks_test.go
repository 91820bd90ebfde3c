package erdma

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handHealthy is a hand-built healthy ebmgn8is-like inventory: two eRDMA
// devices in compat mode on different NUMA nodes, 8 GPUs, peermem loaded.
func handHealthy() *Inventory {
	port := func(ip string, idx int) Port {
		return Port{Number: 1, State: "ACTIVE", StateCode: 4, PhysState: "LinkUp", LinkLayer: "Ethernet",
			Rate: "100 Gb/sec (4X EDR)", RateNominal: true, RecommendedGIDIndex: idx,
			GIDs: []GID{
				{Index: 0, GID: "fe80:0000:0000:0000:0216:3eff:fe2f:3775", Type: "IB/RoCE v1", Netdev: "eth1"},
				{Index: idx, GID: "0000:0000:0000:0000:0000:ffff:" + ip, IP: "", Type: "RoCE v2", Netdev: "eth1"},
			},
			Counters: map[string]uint64{"hw_tx_bytes_cnt": 10, "hw_bps_limit_drop_cnt": 0, "hw_rx_pps_limit_drop_cnt": 0}}
	}
	return &Inventory{
		Root:   "/",
		Kernel: "5.10.134-16.al8.x86_64",
		Devices: []Device{
			{Name: "erdma_0", Driver: "erdma", ERDMA: true, PCIAddress: "0000:3b:00.1", PCIID: "1ded:107f", NUMANode: 0,
				NodeType: "1: CA", NodeGUID: "0216:3eff:fe2f:3775", Transport: TransportRoCE, CompatMode: "Y",
				UVerbs: "uverbs0", UVerbsPresent: true, Ports: []Port{port("0a00:0001", 1)}, Netdev: "eth1", NetdevBy: "gid_attrs"},
			{Name: "erdma_1", Driver: "erdma", ERDMA: true, PCIAddress: "0000:d8:00.1", PCIID: "1ded:107f", NUMANode: 1,
				NodeType: "1: CA", NodeGUID: "0216:3eff:fe2f:3111", Transport: TransportRoCE, CompatMode: "Y",
				UVerbs: "uverbs1", UVerbsPresent: true, Ports: []Port{port("0a00:0002", 1)}, Netdev: "eth2", NetdevBy: "gid_attrs"},
		},
		Netdevs: []Netdev{
			{Name: "eth0", MAC: "00:16:3e:2f:00:01", OperState: "up", MTU: 1500, IPv4: []string{"192.168.0.10/24"}},
			{Name: "eth1", MAC: "00:16:3e:2f:37:75", OperState: "up", MTU: 8500, IPv4: []string{"10.0.0.1/24"}},
			{Name: "eth2", MAC: "00:16:3e:2f:31:11", OperState: "up", MTU: 8500, IPv4: []string{"10.0.0.2/24"}},
		},
		Modules: []Module{
			{Name: "erdma", Loaded: true}, {Name: "ib_core", Loaded: true}, {Name: "ib_uverbs", Loaded: true},
			{Name: "rdma_ucm", Loaded: true}, {Name: "nvidia", Loaded: true, Version: "535.161.08"},
			{Name: "nvidia_peermem", Loaded: true, Version: "535.161.08"}, {Name: "nv_peer_mem"}, {Name: "memory_peers"},
		},
		Memlock:  &Limit{Soft: ^uint64(0), Hard: ^uint64(0), Unlimited: true},
		Tools:    []Tool{{Name: "eadm", Path: "/usr/bin/eadm", Version: "0.2.38"}},
		Instance: &Instance{ID: "i-bp1abc", Type: "ecs.ebmgn8is.32xlarge", Region: "cn-beijing", Source: "flag"},
		Profile:  mustProfile("ecs.ebmgn8is.32xlarge"),
		GPU:      &GPUInfo{Available: true, Count: 8, DriverVersion: "535.161.08", GDRPath: "nvidia_peermem"},
	}
}

func mustProfile(t string) *Profile {
	p, ok, err := LookupProfile(t)
	if err != nil || !ok {
		panic("no profile for " + t)
	}
	return p
}

func findingOf(t *testing.T, r *Report, id string) health.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.ID == id {
			return f
		}
	}
	require.Failf(t, "no finding", "id %s", id)
	return health.Finding{}
}

func testModule(inv *Inventory, name string) *Module {
	for i := range inv.Modules {
		if inv.Modules[i].Name == name {
			return &inv.Modules[i]
		}
	}
	inv.Modules = append(inv.Modules, Module{Name: name})
	return &inv.Modules[len(inv.Modules)-1]
}

func testNetdev(inv *Inventory, name string) *Netdev {
	for i := range inv.Netdevs {
		if inv.Netdevs[i].Name == name {
			return &inv.Netdevs[i]
		}
	}
	panic(name)
}

func TestDiagnoseHandBuiltHealthy(t *testing.T) {
	r := Diagnose(context.Background(), handHealthy(), DoctorOptions{})
	assert.Equal(t, health.OK, r.Status)
	for _, f := range r.Findings {
		assert.Contains(t, []health.Severity{health.OK, health.Skip}, f.Severity, "%s: %s", f.ID, f.Summary)
		assert.NotNil(t, f.Evidence, f.ID)
	}
	require.Len(t, r.Findings, len(Checks()))
	for i, c := range Checks() {
		assert.Equal(t, c.ID, r.Findings[i].ID, "findings follow the check order")
	}
}

// TestChecks changes one fact of the healthy inventory per case and
// expects the named check at the given severity, with text to match.
func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(inv *Inventory)
		id      string
		sev     health.Severity
		summary string // substring of the summary
		fix     string // substring of the remediation
	}{
		{"healthy profile", func(*Inventory) {}, "instance-profile", health.OK, "ebmgn8is", ""},
		{"no instance", func(inv *Inventory) { SetInstance(inv, nil) }, "instance-profile", health.Skip, "instance type unknown", "ecs.<family>.<size>"},
		{"unknown family", func(inv *Inventory) {
			SetInstance(inv, &Instance{Type: "ecs.g7.large", Source: "flag"})
		}, "instance-profile", health.Skip, `"g7" is not a known`, ""},
		{"garbled type", func(inv *Inventory) { inv.Instance.Type = "ebmgn8is"; inv.Profile = nil }, "instance-profile", health.Warn, "not an ECS instance type", "ecs.<family>.<size>"},

		{"two devices", func(*Inventory) {}, "erdma-devices", health.OK, "2 eRDMA device(s): erdma_0, erdma_1", ""},
		{"no devices", func(inv *Inventory) { inv.Devices = nil }, "erdma-devices", health.Fail, "no eRDMA device", "NetworkInterfaceTrafficMode=HighPerformance"},
		{"only rxe", func(inv *Inventory) {
			inv.Devices = []Device{{Name: "rxe0", Driver: "", NodeType: "1: CA"}}
		}, "erdma-devices", health.Fail, "no eRDMA device", "AttachNetworkInterface with NetworkCardIndex"},
		{"fewer than profile", func(inv *Inventory) {
			inv.Devices = inv.Devices[:1]
			SetInstance(inv, &Instance{Type: "ecs.ebmgn9gc.64xlarge", Source: "flag"})
		}, "erdma-devices", health.Warn, "ebmgn9gc has 2 ERIs", "NetworkCardIndex=1"},
		{"more than profile", func(inv *Inventory) {
			SetInstance(inv, &Instance{Type: "ecs.gn8is-2x.8xlarge", Source: "flag"})
		}, "erdma-devices", health.Warn, "gn8is-2x has 1 ERIs", ""},
		{"three devices", func(inv *Inventory) {
			d := inv.Devices[1]
			d.Name = "erdma_2"
			inv.Devices = append(inv.Devices, d)
		}, "erdma-devices", health.Warn, "at most 2", "DetachNetworkInterface"},

		{"channels differ", func(*Inventory) {}, "network-card-channel", health.OK, "hint", "DescribeNetworkInterfaces"},
		{"same channel hints", func(inv *Inventory) {
			inv.Devices[1].NUMANode = 0
			inv.Devices[1].PCIAddress = "0000:3b:00.2"
		}, "network-card-channel", health.Warn, "erdma_0+erdma_1 share NUMA node and PCI bus", "NetworkCardIndex"},
		{"one ERI", func(inv *Inventory) { inv.Devices = inv.Devices[:1] }, "network-card-channel", health.Skip, "no second ERI", ""},

		{"driver loaded", func(*Inventory) {}, "erdma-driver", health.OK, "out-of-tree", ""},
		{"in-kernel driver", func(inv *Inventory) {
			for i := range inv.Devices {
				inv.Devices[i].CompatMode = ""
			}
		}, "erdma-driver", health.OK, "in-kernel", ""},
		{"driver missing", func(inv *Inventory) { inv.Devices = nil; testModule(inv, "erdma").Loaded = false }, "erdma-driver", health.Fail, "not loaded", "env_setup.sh --egs"},
		{"device unbound", func(inv *Inventory) { inv.Devices[1].Driver = "" }, "erdma-driver", health.Fail, "erdma_1 not bound", "modprobe erdma"},

		{"eadm", func(*Inventory) {}, "eadm", health.OK, "0.2.38", ""},
		{"no eadm", func(inv *Inventory) { inv.Tools = []Tool{{Name: "eadm"}, {Name: "mpirun", Path: "/usr/bin/mpirun"}} }, "eadm", health.Warn, "eadm not found", "eadm ver"},
		{"tools not looked for", func(inv *Inventory) { inv.Tools = nil }, "eadm", health.Skip, "not looked for", ""},

		{"uverbs", func(*Inventory) {}, "uverbs", health.OK, "ib_uverbs loaded", ""},
		{"uverbs char missing", func(inv *Inventory) { inv.Devices[0].UVerbsPresent = false }, "uverbs", health.Fail, "/dev/infiniband/uverbs0 missing", "--device=/dev/infiniband/uverbs0"},
		{"no uverbs bound", func(inv *Inventory) { inv.Devices[0].UVerbs = ""; testModule(inv, "ib_uverbs").Loaded = false }, "uverbs", health.Fail, "erdma_0 has no uverbs device", "modprobe ib_uverbs"},
		{"uverbs no devices", func(inv *Inventory) { inv.Devices = nil }, "uverbs", health.Skip, "no eRDMA device", ""},

		{"gpu driver", func(*Inventory) {}, "gpu-driver", health.OK, "535.161.08", ""},
		{"gpu old driver", func(inv *Inventory) { inv.GPU.DriverVersion = "460.32.03" }, "gpu-driver", health.Warn, "older than 470", "470"},
		{"gpu count off", func(inv *Inventory) {
			inv.Profile = &Profile{Family: "x", GPUs: 8, Source: "test"}
			inv.GPU.Count = 7
		}, "gpu-driver", health.Warn, "7 GPU(s) but x has 8", ""},
		{"gpu from module", func(inv *Inventory) { inv.GPU = nil }, "gpu-driver", health.OK, "535.161.08", ""},
		{"gpu garbled version", func(inv *Inventory) { inv.GPU = nil; testModule(inv, "nvidia").Version = "abc" }, "gpu-driver", health.Warn, `"abc" not understood`, ""},
		{"no gpu on gpu type", func(inv *Inventory) {
			inv.GPU = &GPUInfo{Reason: "libnvidia-ml not found"}
			testModule(inv, "nvidia").Loaded = false
		}, "gpu-driver", health.Fail, "no NVIDIA driver loaded on a GPU instance type", "nvidia-smi"},
		{"no gpu unknown type", func(inv *Inventory) {
			inv.GPU = &GPUInfo{Reason: "no NVIDIA driver"}
			testModule(inv, "nvidia").Loaded = false
			SetInstance(inv, nil)
		}, "gpu-driver", health.Skip, "no NVIDIA driver", ""},

		{"peermem", func(*Inventory) {}, "gdr-peermem", health.OK, "nvidia_peermem loaded", ""},
		{"peermem nearest", func(inv *Inventory) {
			inv.GPU.Nearest = []GPUNIC{{GPU: 0, Device: "erdma_0", Distance: "SYS"}}
		}, "gdr-peermem", health.OK, "NCCL_NET_GDR_LEVEL=SYS", ""},
		{"peermem from modules", func(inv *Inventory) { inv.GPU.GDRPath = "" }, "gdr-peermem", health.OK, "nvidia_peermem loaded", ""},
		{"nv_peer_mem", func(inv *Inventory) {
			inv.GPU.GDRPath = ""
			testModule(inv, "nvidia_peermem").Loaded = false
			testModule(inv, "nv_peer_mem").Loaded = true
		}, "gdr-peermem", health.OK, "nv_peer_mem loaded", ""},
		{"no peermem", func(inv *Inventory) { inv.GPU.GDRPath = ""; testModule(inv, "nvidia_peermem").Loaded = false }, "gdr-peermem", health.Fail, "neither nvidia_peermem nor nv_peer_mem", "modprobe nvidia_peermem"},
		{"peermem no gpu", func(inv *Inventory) {
			inv.GPU = &GPUInfo{Reason: "no NVIDIA driver"}
			testModule(inv, "nvidia").Loaded = false
		}, "gdr-peermem", health.Skip, "not applicable", ""},

		{"netdev ok", func(*Inventory) {}, "netdev-ip", health.OK, "up with an IPv4", ""},
		{"netdev no ip", func(inv *Inventory) { testNetdev(inv, "eth2").IPv4 = nil }, "netdev-ip", health.Fail, "eth2 (erdma_1) has no IPv4 address", "macs/00:16:3e:2f:31:11/primary-ip-address"},
		{"netdev down", func(inv *Inventory) { testNetdev(inv, "eth2").OperState = "down" }, "netdev-ip", health.Fail, "eth2 (erdma_1) is down", "ip link set eth2 up"},
		{"netdev unpaired", func(inv *Inventory) { inv.Devices[0].Netdev = "" }, "netdev-ip", health.Fail, "erdma_0 has no paired netdev", "00:16:3e:2f:37:75"},

		{"ports active", func(*Inventory) {}, "port-active", health.OK, "ACTIVE", ""},
		{"port down", func(inv *Inventory) {
			inv.Devices[1].Ports[0].State, inv.Devices[1].Ports[0].StateCode = "DOWN", 1
		}, "port-active", health.Fail, "erdma_1 port 1 is DOWN", "configure eth2"},
		{"no ports", func(inv *Inventory) { inv.Devices[1].Ports = nil }, "port-active", health.Fail, "erdma_1 has no ports", ""},

		{"compat", func(*Inventory) {}, "transport-mode", health.OK, "compat mode", ""},
		{"iwarp", func(inv *Inventory) {
			for i := range inv.Devices {
				inv.Devices[i].Transport, inv.Devices[i].NodeType, inv.Devices[i].CompatMode = TransportIWARP, "4: RNIC", "N"
			}
		}, "transport-mode", health.Warn, "rdma_cm", "compat_mode=Y"},
		{"mixed", func(inv *Inventory) { inv.Devices[1].Transport = TransportIWARP }, "transport-mode", health.Fail, "different modes", "env_setup.sh --egs"},
		{"unknown transport", func(inv *Inventory) {
			inv.Devices[0].Transport, inv.Devices[1].Transport = TransportUnknown, TransportUnknown
		}, "transport-mode", health.Warn, "could not be told", ""},

		{"gid same index", func(*Inventory) {}, "gid-index", health.OK, "NCCL_IB_GID_INDEX=1", ""},
		{"gid differ", func(inv *Inventory) {
			inv.Devices[0].Ports[0].RecommendedGIDIndex = 2
			inv.Devices[0].Ports[0].GIDs[1].Index = 2
		}, "gid-index", health.OK, "NCCL_IB_GID_INDEX=-1", ""},
		{"gid missing", func(inv *Inventory) { inv.Devices[1].Ports[0].RecommendedGIDIndex = -1 }, "gid-index", health.Fail, "erdma_1 port 1 has no RoCE v2 GID", "IPv4"},
		{"gid iwarp", func(inv *Inventory) {
			inv.Devices[0].Transport, inv.Devices[1].Transport = TransportIWARP, TransportIWARP
		}, "gid-index", health.Skip, "iWARP", ""},

		{"mtu 8500", func(*Inventory) {}, "mtu", health.OK, "8500", ""},
		{"mtu 1400", func(inv *Inventory) { testNetdev(inv, "eth1").MTU = 1400; testNetdev(inv, "eth2").MTU = 1400 }, "mtu", health.OK, "1400", ""},
		{"mtu mismatch", func(inv *Inventory) { testNetdev(inv, "eth2").MTU = 1500 }, "mtu", health.Fail, "1500 on eth2; 8500 on eth1", "ip link set eth1 mtu 8500"},
		{"mtu 1500", func(inv *Inventory) { testNetdev(inv, "eth1").MTU = 1500; testNetdev(inv, "eth2").MTU = 1500 }, "mtu", health.Warn, "MTU 1500", "ip link set eth2 mtu 1400"},

		{"memlock unlimited", func(*Inventory) {}, "memlock", health.OK, "unlimited", ""},
		{"memlock 64k", func(inv *Inventory) { inv.Memlock = &Limit{Soft: 65536, Hard: 65536} }, "memlock", health.Fail, "memlock 64 KiB", "/etc/security/limits.conf"},
		{"memlock 32G", func(inv *Inventory) { inv.Memlock = &Limit{Soft: 32 << 30, Hard: 32 << 30} }, "memlock", health.Warn, "32 GiB", "ulimit -l unlimited"},
		{"memlock unread", func(inv *Inventory) { inv.Memlock = nil }, "memlock", health.Skip, "not read", ""},

		{"drops zero", func(*Inventory) {}, "rate-limit-drops", health.OK, "no rate-limit drops", ""},
		{"drops counted", func(inv *Inventory) { inv.Devices[0].Ports[0].Counters["hw_bps_limit_drop_cnt"] = 12 }, "rate-limit-drops", health.Skip, "single reading cannot show", ""},
		{"no counters", func(inv *Inventory) { inv.Devices[0].Ports[0].Counters = nil; inv.Devices[1].Ports[0].Counters = nil }, "rate-limit-drops", health.Skip, "r0.2.33", ""},

		{"host read ok", func(*Inventory) {}, "host-read", health.OK, "every file", ""},
		{"host read errors", func(inv *Inventory) { inv.Errors = []string{"sys/class/infiniband/erdma_0/ports/1/gids/3: garbled"} }, "host-read", health.Warn, "1 read(s) failed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := handHealthy()
			tc.mutate(inv)
			r := Diagnose(context.Background(), inv, DoctorOptions{})
			f := findingOf(t, r, tc.id)
			assert.Equal(t, tc.sev, f.Severity, "%s", f.Summary)
			assert.Contains(t, f.Summary, tc.summary)
			assert.Contains(t, f.Remediation, tc.fix)
			if f.Severity == health.Warn || f.Severity == health.Fail {
				assert.NotEmpty(t, f.Evidence, "a problem quotes what was read")
			}
			assert.Equal(t, expectedStatus(r.Findings), r.Status)
		})
	}
}

func expectedStatus(fs []health.Finding) health.Severity {
	s := health.OK
	for _, f := range fs {
		if f.Severity == health.Fail {
			return health.Fail
		}
		if f.Severity == health.Warn {
			s = health.Warn
		}
	}
	return s
}

// fakeCounters returns the readings of each call in turn.
type fakeCounters struct {
	calls    int
	readings []map[string]uint64 // per call, the same for every device
	err      error
}

func (f *fakeCounters) ReadCounters(_ context.Context, dev string, port int) (map[string]uint64, error) {
	if f.err != nil {
		return nil, f.err
	}
	r := f.readings[min(f.calls/2, len(f.readings)-1)] // two devices per snapshot
	f.calls++
	return r, nil
}

func TestRateLimitDropsTwoReadings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readings []map[string]uint64
		err      error
		sev      health.Severity
		summary  string
	}{
		{"steady", []map[string]uint64{{"hw_bps_limit_drop_cnt": 5}, {"hw_bps_limit_drop_cnt": 5}}, nil, health.OK, "did not rise over 10ms"},
		{"rising", []map[string]uint64{{"hw_bps_limit_drop_cnt": 5, "hw_rx_pps_limit_drop_cnt": 1}, {"hw_bps_limit_drop_cnt": 9, "hw_rx_pps_limit_drop_cnt": 1}},
			nil, health.Warn, "erdma_0 port 1 hw_bps_limit_drop_cnt +4"},
		{"upstream names", []map[string]uint64{{"tx_bps_limit_drop_cnt": 0}, {"tx_bps_limit_drop_cnt": 3}}, nil, health.Warn, "tx_bps_limit_drop_cnt +3"},
		{"read error", nil, errors.New("erdma_0: hw_counters: permission denied"), health.Warn, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeCounters{readings: tc.readings, err: tc.err}
			r := Diagnose(context.Background(), handHealthy(), DoctorOptions{Counters: fc, Interval: 10 * time.Millisecond})
			f := findingOf(t, r, "rate-limit-drops")
			assert.Equal(t, tc.sev, f.Severity, f.Summary)
			assert.Contains(t, f.Summary, tc.summary)
		})
	}
}

func TestRateLimitDropsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fc := &fakeCounters{readings: []map[string]uint64{{"hw_bps_limit_drop_cnt": 1}}}
	start := time.Now()
	r := Diagnose(ctx, handHealthy(), DoctorOptions{Counters: fc, Interval: time.Hour})
	assert.Less(t, time.Since(start), time.Minute)
	f := findingOf(t, r, "rate-limit-drops")
	assert.Equal(t, health.Skip, f.Severity)
	assert.Contains(t, f.Summary, "interrupted")
}

func TestDiagnoseNoERDMAAtAll(t *testing.T) {
	// What `make run` sees on a machine without eRDMA: nothing at all.
	inv := &Inventory{Root: "/", Memlock: &Limit{Soft: 8 << 20, Hard: 8 << 20}}
	r := Diagnose(context.Background(), inv, DoctorOptions{})
	assert.Equal(t, health.Fail, r.Status)
	f := findingOf(t, r, "erdma-devices")
	assert.Equal(t, health.Fail, f.Severity)
	assert.Contains(t, f.Summary, "no eRDMA device on this host")
	assert.Contains(t, strings.Join(f.Evidence, "\n"), "/sys/class/infiniband: no RDMA device at all")
	for _, id := range []string{"uverbs", "netdev-ip", "port-active", "transport-mode", "gid-index", "mtu", "rate-limit-drops", "network-card-channel"} {
		assert.Equal(t, health.Skip, findingOf(t, r, id).Severity, id)
	}
}

func TestDiagnoseNilAndEmpty(t *testing.T) {
	assert.NotPanics(t, func() { Diagnose(context.Background(), nil, DoctorOptions{}) })
	inv := handHealthy()
	inv.Devices[0].Ports[0].GIDs = nil
	inv.Devices[0].Ports[0].Counters = nil
	inv.Netdevs = nil
	inv.Modules = nil
	inv.Tools = nil
	inv.GPU = nil
	assert.NotPanics(t, func() { Diagnose(context.Background(), inv, DoctorOptions{}) })
}

func TestWorst(t *testing.T) {
	assert.Equal(t, health.OK, health.Worst(health.OK, health.Skip))
	assert.Equal(t, health.OK, health.Worst(health.Skip, health.Skip))
	assert.Equal(t, health.Warn, health.Worst(health.OK, health.Warn))
	assert.Equal(t, health.Fail, health.Worst(health.Warn, health.Fail))
	assert.Equal(t, health.Fail, health.Worst(health.Fail, health.Warn))
}

func TestMACFromNodeGUID(t *testing.T) {
	mac, ok := macFromNodeGUID("0216:3eff:fe2f:3775")
	assert.True(t, ok)
	assert.Equal(t, "00:16:3e:2f:37:75", mac)
	for _, bad := range []string{"", "0216:3eff:fe2f", "0216:3eff:0e2f:3775", "zz16:3eff:fe2f:3775"} {
		_, ok := macFromNodeGUID(bad)
		assert.False(t, ok, bad)
	}
}

func TestCheckIDsStable(t *testing.T) {
	var ids []string
	for _, c := range Checks() {
		ids = append(ids, c.ID)
		assert.Regexp(t, `^[a-z0-9]+(-[a-z0-9]+)*$`, c.ID)
	}
	assert.Equal(t, []string{"host-read", "instance-profile", "erdma-devices", "network-card-channel", "erdma-driver", "eadm",
		"uverbs", "gpu-driver", "gdr-peermem", "netdev-ip", "port-active", "transport-mode", "gid-index", "mtu", "memlock",
		"rate-limit-drops"}, ids)
}

func TestInstanceErrorIsEvidence(t *testing.T) {
	inv := handHealthy()
	SetInstance(inv, nil)
	r := Diagnose(context.Background(), inv, DoctorOptions{InstanceError: errors.New("metadata: connection refused")})
	f := findingOf(t, r, "instance-profile")
	assert.Equal(t, health.Skip, f.Severity)
	assert.Equal(t, []string{"metadata: connection refused"}, f.Evidence)
}

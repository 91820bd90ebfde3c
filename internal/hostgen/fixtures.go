package hostgen

import (
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// Unlimited is RLIM_INFINITY.
const Unlimited = ^uint64(0)

// ERDMACounters are the out-of-tree driver's hw_counters (names from
// elastic-rdma-drivers erdma_stats.c, r0.2.37), with the values of a host that
// has moved some traffic. Names only: the values are invented.
func ERDMACounters(seed uint64) map[string]uint64 {
	names := []string{
		"listen_create_cnt", "listen_ipv6_cnt", "listen_success_cnt", "listen_failed_cnt", "listen_destroy_cnt",
		"accept_total_cnt", "accept_success_cnt", "accept_failed_cnt", "reject_cnt", "reject_failed_cnt",
		"connect_total_cnt", "connect_success_cnt", "connect_failed_cnt", "connect_timeout_cnt", "connect_reset_cnt",
		"cmdq_submitted_cnt", "cmdq_comp_cnt", "cmdq_eq_notify_cnt", "cmdq_eq_event_cnt", "cmdq_cq_armed_cnt",
		"erdma_aeq_event_cnt", "erdma_aeq_notify_cnt",
		"verbs_alloc_mr_cnt", "verbs_alloc_mr_failed_cnt", "verbs_alloc_pd_cnt", "verbs_alloc_pd_failed_cnt",
		"verbs_alloc_uctx_cnt", "verbs_alloc_uctx_failed_cnt", "verbs_create_cq_cnt", "verbs_create_cq_failed_cnt",
		"verbs_create_qp_cnt", "verbs_create_qp_failed_cnt", "verbs_destroy_qp_cnt", "verbs_destroy_cq_cnt",
		"verbs_dealloc_pd_cnt", "verbs_dealloc_uctx_cnt", "verbs_dereg_mr_cnt", "verbs_dereg_mr_failed_cnt",
		"verbs_destroy_cq_failed_cnt", "verbs_destroy_qp_failed_cnt", "verbs_get_dma_mr_cnt",
		"verbs_get_dma_mr_failed_cnt", "verbs_reg_usr_mr_cnt", "verbs_reg_usr_mr_failed_cnt",
		"hw_tx_reqs_cnt", "hw_tx_packets_cnt", "hw_tx_bytes_cnt", "hw_disable_drop_cnt", "hw_bps_limit_drop_cnt",
		"hw_pps_limit_drop_cnt", "hw_rx_packets_cnt", "hw_rx_bytes_cnt", "hw_rx_disable_drop_cnt",
		"hw_rx_bps_limit_drop_cnt", "hw_rx_pps_limit_drop_cnt",
	}
	m := make(map[string]uint64, len(names))
	for _, n := range names {
		m[n] = 0
	}
	m["hw_tx_bytes_cnt"] = 7340032000 + seed
	m["hw_rx_bytes_cnt"] = 7340032000 + 2*seed
	m["hw_tx_packets_cnt"] = 1792000 + seed
	m["hw_rx_packets_cnt"] = 1792000 + seed
	m["hw_tx_reqs_cnt"] = 112000
	m["connect_total_cnt"] = 16
	m["connect_success_cnt"] = 16
	m["verbs_create_qp_cnt"] = 16
	m["verbs_destroy_qp_cnt"] = 16
	m["verbs_reg_usr_mr_cnt"] = 4
	m["verbs_dereg_mr_cnt"] = 4
	return m
}

// NIC is one eRDMA interface of a generated host: the RDMA device and its
// paired netdev.
type NIC struct {
	Dev, PCI, Netdev, MAC, IPv4 string // IPv4 in CIDR form, "" for none
	NUMA, MTU, GIDIndex         int    // GIDIndex: where the RoCE v2 IPv4 entry sits
	Down                        bool
}

// CompatDevice returns a compat-mode (RoCE v2) eRDMA device for nic.
func CompatDevice(nic NIC, uverbs int) Device {
	gids := []GID{{Index: 0, GID: LinkLocalGID(nic.MAC), Type: "RoCE v2", Ndev: nic.Netdev}}
	if nic.IPv4 != "" {
		ip := ipOf(nic.IPv4)
		if nic.GIDIndex > 1 {
			// A RoCE v1 entry for the same address sits before the v2 one,
			// so the v2 entry lands at GIDIndex (the domain doc: indexes
			// differ per device).
			gids = append(gids, GID{Index: nic.GIDIndex - 1, GID: IPv4GID(ip), Type: "IB/RoCE v1", Ndev: nic.Netdev})
		}
		gids = append(gids, GID{Index: nic.GIDIndex, GID: IPv4GID(ip), Type: "RoCE v2", Ndev: nic.Netdev})
	}
	port := Port{State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)", LinkLayer: "Ethernet",
		GIDTable: 16, GIDs: gids, Counters: ERDMACounters(uint64(uverbs) * 4096)}
	if nic.Down {
		port.State = "1: DOWN"
		port.PhysState = "3: Disabled"
	}
	return Device{Name: nic.Dev, PCI: nic.PCI, NUMA: nic.NUMA, Driver: "erdma", Vendor: "0x1ded", DeviceID: "0x107f",
		NodeType: "1: CA", MAC: nic.MAC, FWVer: "0.2.0", UVerbs: uverbs, Ports: []Port{port}}
}

// IWARPDevice returns an iWARP-mode eRDMA device for nic: node_type RNIC, one
// GID holding the MAC, no GID attributes.
func IWARPDevice(nic NIC, uverbs int) Device {
	d := CompatDevice(nic, uverbs)
	d.NodeType = "4: RNIC"
	d.Ports[0].GIDTable = 1
	d.Ports[0].GIDs = []GID{{Index: 0, GID: MACGID(nic.MAC)}}
	d.Ports[0].NoGIDAttrs = true
	return d
}

// NetdevOf returns the netdev of nic as netlink would report it.
func NetdevOf(nic NIC) erdma.Netdev {
	n := erdma.Netdev{Name: nic.Netdev, MAC: nic.MAC, PermMAC: nic.MAC, OperState: "up", MTU: nic.MTU,
		IPv4: []string{}, Driver: "virtio_net"}
	if nic.IPv4 != "" {
		n.IPv4 = []string{nic.IPv4}
	}
	if nic.Down {
		n.OperState = "down"
	}
	return n
}

func ipOf(cidr string) string {
	for i := 0; i < len(cidr); i++ {
		if cidr[i] == '/' {
			return cidr[:i]
		}
	}
	return cidr
}

// primary is eth0, the primary ENI (no RDMA).
func primary() erdma.Netdev {
	return erdma.Netdev{Name: "eth0", MAC: "00:16:3e:2f:37:70", PermMAC: "00:16:3e:2f:37:70", OperState: "up",
		MTU: 1500, IPv4: []string{"172.16.0.10/24"}, Driver: "virtio_net"}
}

// HealthyNICs are the two eRDMA interfaces of the ebmgn8is-healthy host
// (addresses agreed with the nvml fixture).
func HealthyNICs() []NIC {
	return []NIC{
		{Dev: "erdma_0", PCI: "0000:00:05.0", Netdev: "eth1", MAC: "00:16:3e:2f:37:75", IPv4: "192.168.10.11/24",
			NUMA: 0, MTU: 8500, GIDIndex: 1},
		{Dev: "erdma_1", PCI: "0000:80:05.0", Netdev: "eth2", MAC: "00:16:3e:2f:37:76", IPv4: "192.168.11.11/24",
			NUMA: 1, MTU: 8500, GIDIndex: 2},
	}
}

func gpuModules() map[string]string {
	return map[string]string{
		"erdma": "", "ib_core": "", "ib_uverbs": "", "rdma_ucm": "", "ib_cm": "", "iw_cm": "",
		"nvidia": "535.161.08", "nvidia_peermem": "535.161.08",
	}
}

func gpuTools() []erdma.Tool {
	return []erdma.Tool{
		{Name: "eadm", Path: "/usr/bin/eadm", Version: "0.2.37"},
		{Name: "ofed_info", Path: "/usr/bin/ofed_info", Version: "MLNX_OFED_LINUX-5.4-3.6.8.1"},
		{Name: "ib_write_bw", Path: "/usr/bin/ib_write_bw", Version: "5.95"},
		{Name: "mpirun", Path: "/usr/local/bin/mpirun", Version: "4.1.5"},
		{Name: "all_reduce_perf", Path: "/root/nccl-tests/build/all_reduce_perf"},
		{Name: "nvidia-smi", Path: "/usr/bin/nvidia-smi", Version: "535.161.08"},
	}
}

// Host returns a spec with the given eRDMA NICs in compat mode on an
// ebmgn8is-like base (eth0 primary, GPU modules, memlock unlimited).
func Host(name string, nics []NIC) Spec {
	s := Spec{
		Name:       name,
		Hostname:   "gpu-node-a",
		Kernel:     "5.10.134-16.3.al8.x86_64",
		Modules:    gpuModules(),
		CompatMode: "Y",
		Memlock:    erdma.Limit{Soft: Unlimited, Hard: Unlimited, Unlimited: true},
		Tools:      gpuTools(),
		Netdevs:    []erdma.Netdev{primary()},
		Instance:   &erdma.Instance{ID: "i-bp1erdmakit0000001", Type: "ecs.ebmgn8is.32xlarge", Region: "cn-hangzhou", Source: "recorded"},
	}
	for i, n := range nics {
		s.Devices = append(s.Devices, CompatDevice(n, i))
		s.Netdevs = append(s.Netdevs, NetdevOf(n))
	}
	return s
}

// ManyNICs returns n generated eRDMA NICs (for the per-device benchmark).
func ManyNICs(n int) []NIC {
	nics := make([]NIC, n)
	for i := range nics {
		nics[i] = NIC{Dev: fmt.Sprintf("erdma_%d", i), PCI: fmt.Sprintf("0000:%02x:05.0", i*4%256),
			Netdev: fmt.Sprintf("eth%d", i+1), MAC: fmt.Sprintf("00:16:3e:30:%02x:%02x", i/256, i%256),
			IPv4: fmt.Sprintf("192.168.%d.11/24", 10+i%200), NUMA: i % 2, MTU: 8500, GIDIndex: 1 + i%2}
	}
	return nics
}

const made = "Made by `go run ./internal/hostgen/cmd/hostgen` from the spec in internal/hostgen/fixtures.go " +
	"(values modelled on the domain doc and the public eRDMA samples, not captured from a real host)."

// Fixtures returns the specs of every committed fixture,
// testdata/hosts/<name>.tar.gz.
func Fixtures() []Spec {
	healthy := func(name, readme string) Spec {
		s := Host(name, HealthyNICs())
		s.Readme = readme + "\n\n" + made
		return s
	}
	var out []Spec

	out = append(out, healthy("ebmgn8is-healthy",
		"A healthy ecs.ebmgn8is.32xlarge: 2 eRDMA devices in compat mode (erdma_0 at 0000:00:05.0 on NUMA 0 "+
			"paired with eth1, RoCE v2 IPv4 GID at index 1; erdma_1 at 0000:80:05.0 on NUMA 1 paired with eth2, "+
			"GID index 2), MTU 8500, nvidia + nvidia_peermem loaded, memlock unlimited. The nvml fixture adds the "+
			"8 GPUs (sys/bus/pci, erdmakit/nvml.json) to this tree."))

	single := Host("gn8is-single", HealthyNICs()[:1])
	single.Instance.Type = "ecs.gn8is-2x.8xlarge"
	single.Readme = "A gn8is-like host with a single eRDMA device (erdma_0/eth1, GID index 1), compat mode.\n\n" + made
	out = append(out, single)

	iw := Host("iwarp-mode", nil)
	nic := HealthyNICs()[0]
	iw.Devices = []Device{IWARPDevice(nic, 0)}
	iw.Netdevs = append(iw.Netdevs, NetdevOf(nic))
	iw.CompatMode = "N"
	iw.Readme = "eRDMA in iWARP mode (compat_mode=N): node_type 4: RNIC, one GID holding the MAC, no GID " +
		"attributes, so no RoCE v2 GID and QPs connect only through rdma_cm.\n\n" + made
	out = append(out, iw)

	nics := HealthyNICs()
	nics[1].IPv4 = ""
	nics[1].Down = true
	down := Host("port-down-no-ip", nics)
	down.Readme = "erdma_1's port is DOWN (ibv_devinfo: invalid state) because eth2 is down with no IPv4: " +
		"only the link-local GID is populated.\n\n" + made
	out = append(out, down)

	nodrv := Host("no-erdma-driver", nil)
	for _, n := range HealthyNICs() {
		nodrv.Netdevs = append(nodrv.Netdevs, NetdevOf(n))
	}
	for _, m := range []string{"erdma", "ib_core", "ib_uverbs", "rdma_ucm", "ib_cm", "iw_cm"} {
		delete(nodrv.Modules, m)
	}
	nodrv.Tools = nodrv.Tools[2:] // no eadm, no ofed_info
	nodrv.Readme = "The ERIs are attached (eth1, eth2 configured) but the eRDMA driver is not installed: no " +
		"sys/class/infiniband, no erdma module, no eadm.\n\n" + made
	out = append(out, nodrv)

	nopeer := healthy("no-peermem", "Healthy eRDMA, but nvidia_peermem is not loaded (GPUDirect RDMA unavailable).")
	delete(nopeer.Modules, "nvidia_peermem")
	out = append(out, nopeer)

	ml := healthy("memlock-64k", "Healthy eRDMA, but RLIMIT_MEMLOCK is 64 KiB (every ibv_create_qp fails with ENOMEM).")
	ml.Memlock = erdma.Limit{Soft: 65536, Hard: 65536}
	out = append(out, ml)

	nics = HealthyNICs()
	nics[1].MTU = 1400
	mtu := Host("mtu-mismatch", nics)
	mtu.Readme = "eth1 has MTU 8500 and eth2 MTU 1400: the two eRDMA netdevs disagree.\n\n" + made
	out = append(out, mtu)
	return out
}

package erdma

import (
	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/health"
)

// This file holds the inventory's nouns. Their JSON names are the public
// schema of `erdmakit devices --json` and of the "host" object of
// `erdmakit doctor --json`: add fields, never rename them.

// Transport is how a device's queue pairs are connected: package connect's
// type, named here too so the inventory reads as before.
type Transport = connect.Transport

// The transports, as in package connect.
const (
	TransportRoCE    = connect.RoCE
	TransportIWARP   = connect.IWARP
	TransportIB      = connect.IB
	TransportUnknown = connect.UnknownTransport
)

// Device is one entry of sys/class/infiniband.
type Device struct {
	Name       string `json:"name"`
	Driver     string `json:"driver"`                // from device/driver link; "" if unbound or not PCI (rxe)
	ERDMA      bool   `json:"erdma"`                 // by driver "erdma" or PCI id 1ded:107f, never by name
	PCIAddress string `json:"pci_address,omitempty"` // "0000:00:05.0"
	PCIID      string `json:"pci_id,omitempty"`      // "1ded:107f"
	NUMANode   int    `json:"numa_node"`             // -1 when unknown
	NodeType   string `json:"node_type"`             // as in sysfs: "1: CA", "4: RNIC"
	NodeGUID   string `json:"node_guid"`             // "0216:3eff:fe2f:3775"
	FWVer      string `json:"fw_ver,omitempty"`
	// Transport is the personality used to connect (see Transport).
	Transport Transport `json:"transport"`
	// CompatMode is /sys/module/erdma/parameters/compat_mode where it exists
	// ("Y"/"N"), "" where the driver has no such parameter.
	CompatMode string `json:"compat_mode,omitempty"`
	// UVerbs is the uverbs char device name ("uverbs0"), "" if none is bound.
	UVerbs string `json:"uverbs,omitempty"`
	// UVerbsPresent reports whether dev/infiniband/<UVerbs> exists.
	UVerbsPresent bool   `json:"uverbs_present"`
	Ports         []Port `json:"ports"`
	// Netdev is the paired network interface name ("eth1"), "" if not found.
	Netdev string `json:"netdev,omitempty"`
	// NetdevBy says how Netdev was found: "gid_attrs", "mac", "rdmamap", "".
	NetdevBy string `json:"netdev_by,omitempty"`
}

// Port is one port of an RDMA device, sys/class/infiniband/<dev>/ports/<n>.
type Port struct {
	Number    int    `json:"number"`
	State     string `json:"state"`      // "ACTIVE", "DOWN", "INIT", ...
	StateCode int    `json:"state_code"` // 4 for ACTIVE
	PhysState string `json:"phys_state"` // "LinkUp"
	LinkLayer string `json:"link_layer"` // "Ethernet"
	Rate      string `json:"rate"`       // as read: "100 Gb/sec (4X EDR)"
	// RateNominal is true on eRDMA, whose rate file is hard-coded.
	RateNominal bool  `json:"rate_nominal"`
	GIDs        []GID `json:"gids"` // populated entries only
	// RecommendedGIDIndex is the RoCE v2 entry whose GID is ::ffff:<IPv4 of
	// the paired netdev>; -1 when there is none.
	RecommendedGIDIndex int `json:"recommended_gid_index"`
	// Counters is hw_counters as name -> value, names as the driver spells
	// them (both "hw_tx_bytes_cnt" and "tx_bytes_cnt" occur).
	Counters map[string]uint64 `json:"counters,omitempty"`
}

// GID is one populated GID table entry.
type GID struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`              // "0000:0000:0000:0000:0000:ffff:0a00:0001"
	IP     string `json:"ip,omitempty"`     // "10.0.0.1" for IPv4-mapped entries
	Type   string `json:"type,omitempty"`   // "RoCE v2", "IB/RoCE v1"
	Netdev string `json:"netdev,omitempty"` // gid_attrs/ndevs/<n>
}

// Netdev is a network interface as the doctor needs it.
type Netdev struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`                // address
	PermMAC   string   `json:"perm_mac,omitempty"` // perm_addr where readable
	OperState string   `json:"operstate"`          // "up", "down", ...
	MTU       int      `json:"mtu"`
	IPv4      []string `json:"ipv4"`             // CIDR form: "10.0.0.1/24"
	Driver    string   `json:"driver,omitempty"` // "virtio_net"
	// RDMADevice is the RDMA device the host's own lookup pairs with this
	// link (rdmamap on a live host, recorded as such), "" if none.
	RDMADevice string `json:"rdma_device,omitempty"`
}

// Module is a kernel module the doctor cares about.
type Module struct {
	Name    string `json:"name"`
	Loaded  bool   `json:"loaded"`
	Version string `json:"version,omitempty"` // sys/module/<name>/version where present
}

// Limit is a resource limit; Unlimited when the value is RLIM_INFINITY.
type Limit struct {
	Soft      uint64 `json:"soft"`
	Hard      uint64 `json:"hard"`
	Unlimited bool   `json:"unlimited"`
}

// Tool is a program on PATH and its version where it is cheap to ask.
type Tool struct {
	Name    string `json:"name"`
	Path    string `json:"path,omitempty"` // "" when not found
	Version string `json:"version,omitempty"`
}

// Instance is what the ECS metadata service says about this instance.
type Instance struct {
	ID     string `json:"id"`
	Type   string `json:"type"` // "ecs.ebmgn8is.32xlarge"
	Region string `json:"region"`
	Source string `json:"source"` // "metadata", "recorded", "flag"
	// JumboFrames is the instance's EnableJumboFrame (DescribeInstanceAttribute,
	// as Alibaba's erdma-controller reads it); nil when unknown. ERIMTU
	// turns it into the MTU the ERIs must have.
	JumboFrames *bool `json:"jumbo_frames,omitempty"`
}

// The MTUs the guide allows on an ERI: 8500 with jumbo frames, else 1400.
const (
	MTUJumbo = 8500
	MTUSmall = 1400
)

// ERIMTU is the MTU every ERI of the instance must have: MTUJumbo when
// jumbo frames are enabled, MTUSmall when they are not, 0 when that is
// unknown. The doctor's mtu check and setup's os stage both ask it.
func ERIMTU(inst *Instance) int {
	switch {
	case inst == nil || inst.JumboFrames == nil:
		return 0
	case *inst.JumboFrames:
		return MTUJumbo
	}
	return MTUSmall
}

// Profile is what a known instance type should have.
type Profile struct {
	// Family is the instance family the type belongs to ("ebmgn8is").
	Family string `json:"family"`
	// ERIs is the expected number of eRDMA interfaces.
	ERIs int `json:"eris"`
	// Type is set when the figures are the size's own (section 10's
	// per-type table), "" for a family-wide profile.
	Type string `json:"type,omitempty"`
	// GPUs is the expected GPU count, 0 when unknown.
	GPUs int `json:"gpus,omitempty"`
	// GPUModel is the published GPU model ("L20 48 GB"), "" when unknown.
	GPUModel string `json:"gpu_model,omitempty"`
	// NetGbps is the published baseline network bandwidth of all NICs,
	// Gbit/s; 0 when unknown. Not an RDMA write expectation.
	NetGbps float64 `json:"net_gbps,omitempty"`
	// WriteGbps is the expected ib_write_bw aggregate over all ERIs, Gbit/s;
	// 0 when no measured figure is known.
	WriteGbps float64 `json:"write_gbps,omitempty"`
	// Source names where the figures come from.
	Source string `json:"source"`
}

// GPUInfo is what the doctor needs to know about the host's GPUs. The nvml
// package fills it; erdma does not import nvml (the CLI wires them).
type GPUInfo struct {
	// Available is false when NVML could not be used; Reason says why
	// ("no NVIDIA driver", "libnvidia-ml not found", ...).
	Available     bool   `json:"available"`
	Reason        string `json:"reason,omitempty"`
	Count         int    `json:"count"`
	DriverVersion string `json:"driver_version,omitempty"` // "535.161.08"
	// GDRPath is the GPUDirect RDMA path in effect: "dmabuf",
	// "nvidia_peermem", "nv_peer_mem", "memory_peers", or "" when none.
	GDRPath string `json:"gdr_path,omitempty"`
	// DMABUF says whether GPUDirect RDMA through DMA-BUF is supported:
	// "yes", "no", "unknown" (not all of kernel, module flavour, rdma-core
	// and the RDMA provider were seen), "" when not checked.
	DMABUF string `json:"dmabuf,omitempty"`
	// DMABUFRefusedBy names the RDMA providers that register no dma-buf
	// ("erdma": rdma-core's providers/erdma has no reg_dmabuf_mr): there
	// GPUDirect RDMA needs nvidia_peermem whatever else holds.
	DMABUFRefusedBy []string `json:"dmabuf_refused_by,omitempty"`
	// GDRPeermem is the peer-memory mechanism seen ("nvidia_peermem",
	// "nv_peer_mem", "memory_peers"), "" when none, whatever GDRPath is;
	// GDRPersistent reports whether that module is named in
	// etc/modules-load.d/*.conf, etc/modules or an rc.local (loaded again
	// after a reboot). The gpu stage plans from them without reading the
	// GPUs again.
	GDRPeermem    string `json:"gdr_peermem,omitempty"`
	GDRPersistent bool   `json:"gdr_persistent,omitempty"`
	// NVLink says whether the GPUs have NVLink between them: "yes", "no",
	// "unknown" (NVML could not say), "" when not read. Without it
	// intra-node collectives go over PCIe.
	NVLink string `json:"nvlink,omitempty"`
	// NICDistances is, per GPU index, the nvidia-smi distance word (PIX, PXB,
	// PHB, NODE, SYS) to its nearest eRDMA device, and that device.
	Nearest []GPUNIC `json:"nearest,omitempty"`
}

// GPUNIC is one GPU's nearest eRDMA device and the distance to it.
type GPUNIC struct {
	GPU      int    `json:"gpu"`
	Device   string `json:"device"`
	Distance string `json:"distance"`
}

// Inventory is everything read from one host.
type Inventory struct {
	Root     string    `json:"root"` // "/" or the recorded host's directory
	Hostname string    `json:"hostname,omitempty"`
	Kernel   string    `json:"kernel,omitempty"` // proc/sys/kernel/osrelease
	Devices  []Device  `json:"devices"`
	Netdevs  []Netdev  `json:"netdevs"`
	Modules  []Module  `json:"modules"`
	Memlock  *Limit    `json:"memlock,omitempty"`
	Tools    []Tool    `json:"tools"`
	Instance *Instance `json:"instance,omitempty"`
	Profile  *Profile  `json:"profile,omitempty"`
	GPU      *GPUInfo  `json:"gpu,omitempty"`
	// Errors are reads that failed but did not stop the inventory, each
	// naming the file or source.
	Errors []string `json:"errors,omitempty"`
}

// Snapshot is one look at a host, as a scraper takes it (monitor's
// exporter, through doctor.Snapshot): the inventory (devices, ports,
// counters, netdevs) and, when the doctor ran, its report on it.
type Snapshot struct {
	Inventory *Inventory
	Report    *Report // nil when the doctor is not run
}

// Report is the doctor's output, the public schema of `doctor --json`.
type Report struct {
	Status   health.Severity  `json:"status"` // ok | warn | fail
	Findings []health.Finding `json:"findings"`
	Host     *Inventory       `json:"host"`
}

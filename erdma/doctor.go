package erdma

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/nvrules"
)

// CounterSource reads one port's hw_counters now (name -> value, names as
// the driver spells them). The doctor uses it to take two readings some
// interval apart; tests replace it.
type CounterSource interface {
	ReadCounters(ctx context.Context, dev string, port int) (map[string]uint64, error)
}

// CounterSourceFunc adapts a function to CounterSource.
type CounterSourceFunc func(ctx context.Context, dev string, port int) (map[string]uint64, error)

// ReadCounters calls f.
func (f CounterSourceFunc) ReadCounters(ctx context.Context, dev string, port int) (map[string]uint64, error) {
	return f(ctx, dev, port)
}

// DoctorOptions are what the host checks read besides the inventory.
type DoctorOptions struct {
	// Counters, with Interval > 0, lets the rate-limit-drops check take two
	// readings Interval apart and see whether the drop counters rise. When
	// nil (a recorded host) the single reading in the inventory is reported.
	Counters CounterSource
	// Interval between the two counter readings; 0 means one reading.
	Interval time.Duration
	// InstanceError, when set, says why inv.Instance is unknown (the
	// metadata service did not answer, ...): it becomes evidence of the
	// instance-profile check.
	InstanceError error
}

// Check describes one doctor check: its stable id and the guide step it
// enforces.
type Check struct {
	ID    string `json:"id"`
	Step  string `json:"step"`
	Title string `json:"title"`
}

// Ids of the checks this package owns; the doctor's JSON and users'
// alerting use them.
const (
	FindingHostRead           = "host-read"
	FindingInstanceProfile    = "instance-profile"
	FindingERDMADevices       = "erdma-devices"
	FindingNetworkCardChannel = "network-card-channel"
	FindingERDMADriver        = "erdma-driver"
	FindingEadm               = "eadm"
	FindingUVerbs             = "uverbs"
	FindingGPUDriver          = "gpu-driver"
	FindingGDRPeermem         = "gdr-peermem"
	FindingNetdevIP           = "netdev-ip"
	FindingPortActive         = "port-active"
	FindingTransportMode      = "transport-mode"
	FindingGIDIndex           = "gid-index"
	FindingMTU                = "mtu"
	FindingMemlock            = "memlock"
	FindingRateLimitDrops     = "rate-limit-drops"
)

// Setup stages whose fix makes a host check pass (HostCheck.FixedBy), in
// the guide's order. The doctor owns the fixes (doctor.Fix, one per stage)
// and re-exports these names; they are here so that a check names its fix
// where the check is declared, without importing the doctor.
const (
	StageDriver = "driver"
	StageOS     = "os"
	StageGPU    = "gpu"
	StageLimits = "limits"
)

// HostCheck is a check decided from the inventory alone: a Check and the
// function that decides it. HostChecks are this package's; a package below
// the doctor contributes its own the same way (eri.DoctorChecks) without
// importing it, and doctor.HostChecks makes doctor checks of them. After,
// for a contributed check, names the check it goes right after ("": at the
// end; a contributed check whose ID is a built-in's replaces it in place).
// FixedBy names the setup stage whose fix makes the check pass (StageOS,
// ...; "" when none): doctor.HostChecks gives the check that fix
// (doctor.Check.Fix), so a check and its fix are declared together.
type HostCheck struct {
	Check
	After   string
	FixedBy string
	Run     func(ctx context.Context, inv *Inventory, opt DoctorOptions) health.Finding
}

// fixedBy is hc with the stage whose fix makes it pass.
func (hc HostCheck) fixedBy(stage string) HostCheck {
	hc.FixedBy = stage
	return hc
}

// hostCheck adapts a check on the shared lookups to HostCheck.
func hostCheck(id, step, title string, run func(context.Context, *diag) health.Finding) HostCheck {
	return HostCheck{Check: Check{id, step, title}, Run: func(ctx context.Context, inv *Inventory, opt DoctorOptions) health.Finding {
		if inv == nil {
			inv = &Inventory{}
		}
		f := run(ctx, newDiag(inv, opt))
		f.ID = id
		if f.Evidence == nil {
			f.Evidence = []string{}
		}
		return f
	}}
}

// HostChecks returns the checks this package owns, in the order the guide
// goes. A function, not a variable: the list cannot be changed by anyone.
func HostChecks() []HostCheck {
	return []HostCheck{
		hostCheck(FindingHostRead, "-", "every file of the host could be read", checkHostRead),
		hostCheck(FindingInstanceProfile, "guide step 1", "the instance type is a known eRDMA GPU type", checkInstanceProfile),
		hostCheck(FindingERDMADevices, "guide steps 1, 4", "eRDMA devices present, as many as the instance type has", checkERDMADevices),
		hostCheck(FindingNetworkCardChannel, "guide step 1", "two ERIs sit on different network-card channels", checkNetworkCardChannel),
		hostCheck(FindingERDMADriver, "guide step 2", "the erdma driver is loaded and bound", checkDriver).fixedBy(StageDriver),
		hostCheck(FindingEadm, "guide step 2", "the eRDMA tools (eadm) are installed", checkEadm).fixedBy(StageDriver),
		hostCheck(FindingUVerbs, "guide step 2", "ib_uverbs is loaded and every device has its /dev/infiniband/uverbsN", checkUVerbs),
		hostCheck(FindingGPUDriver, "guide step 2", "the NVIDIA driver is loaded, version "+nvrules.AtLeast(), checkGPUDriver),
		hostCheck(FindingGDRPeermem, "guide step 2", "nvidia_peermem (or nv_peer_mem) is loaded for GPUDirect RDMA", checkPeermem).fixedBy(StageGPU),
		hostCheck(FindingNetdevIP, "guide step 3", "every ERI's netdev is up with an IPv4 address", checkNetdevIP).fixedBy(StageOS),
		hostCheck(FindingPortActive, "guide step 4", "every eRDMA port is ACTIVE", checkPortActive),
		hostCheck(FindingTransportMode, "domain section 3", "compat (RoCE v2) vs iWARP, the same on every device", checkTransport).fixedBy(StageDriver),
		hostCheck(FindingGIDIndex, "domain section 3", "a RoCE v2 GID ::ffff:<IPv4> exists; its index", checkGIDIndex),
		hostCheck(FindingMTU, "guide, Enable Jumbo Frames", "ERI MTUs are 8500 (jumbo frames) or 1400 and agree", checkMTU).fixedBy(StageOS),
		hostCheck(FindingMemlock, "rdma-core, NCCL practice", "RLIMIT_MEMLOCK is unlimited", checkMemlock).fixedBy(StageLimits),
		hostCheck(FindingRateLimitDrops, "domain section 4", "the *_limit_drop_cnt counters are not rising", checkRateLimitDrops),
	}
}

// diag is what every check shares: the inventory and lookups built once.
type diag struct {
	inv     *Inventory
	opt     DoctorOptions
	erdma   []*Device
	netdevs map[string]*Netdev
	modules map[string]*Module
	tools   map[string]*Tool
}

func newDiag(inv *Inventory, opt DoctorOptions) *diag {
	d := &diag{inv: inv, opt: opt,
		netdevs: make(map[string]*Netdev, len(inv.Netdevs)),
		modules: make(map[string]*Module, len(inv.Modules)),
		tools:   make(map[string]*Tool, len(inv.Tools)),
	}
	for i := range inv.Devices {
		if inv.Devices[i].ERDMA {
			d.erdma = append(d.erdma, &inv.Devices[i])
		}
	}
	for i := range inv.Netdevs {
		d.netdevs[inv.Netdevs[i].Name] = &inv.Netdevs[i]
	}
	for i := range inv.Modules {
		d.modules[inv.Modules[i].Name] = &inv.Modules[i]
	}
	for i := range inv.Tools {
		d.tools[inv.Tools[i].Name] = &inv.Tools[i]
	}
	return d
}

// path is a host path as it should appear in evidence: absolute on the
// live host, under the recorded root otherwise.
func (d *diag) path(parts ...string) string {
	root := d.inv.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// source names where a fact the kernel keeps no file for came from: the
// live source on the live host, the recorded file otherwise.
func (d *diag) source(live, recorded string) string {
	if d.inv.Root == "" || d.inv.Root == "/" {
		return live
	}
	return d.path(recorded)
}

func (d *diag) ibPath(dev string, parts ...string) string {
	return d.path(append([]string{"sys/class/infiniband", dev}, parts...)...)
}

func (d *diag) loaded(name string) bool {
	m := d.modules[name]
	return m != nil && m.Loaded
}

func (d *diag) moduleEvidence(name string) string {
	m := d.modules[name]
	switch {
	case m == nil:
		return fmt.Sprintf("%s: not inspected", d.path("sys/module", name))
	case !m.Loaded:
		return fmt.Sprintf("%s: absent (module %s not loaded)", d.path("sys/module", name), name)
	case m.Version != "":
		return fmt.Sprintf("%s: present, version %q", d.path("sys/module", name), m.Version)
	}
	return fmt.Sprintf("%s: present", d.path("sys/module", name))
}

// netdevOf returns the netdev paired with dev, nil when there is none.
func (d *diag) netdevOf(dev *Device) *Netdev {
	if dev.Netdev == "" {
		return nil
	}
	return d.netdevs[dev.Netdev]
}

// noERDMA is the finding of a check that needs eRDMA devices when there
// are none.
func noERDMA() health.Finding {
	return health.Finding{Severity: health.Skip, Summary: "no eRDMA device to check (see erdma-devices)"}
}

// macFromNodeGUID is the MAC an eRDMA node_guid was made from (the
// EUI-64 rule, gid.GUID.MAC): "0216:3eff:fe2f:3775" -> "00:16:3e:2f:37:75".
// ok is false when guid is not an EUI-64 built from a MAC.
func macFromNodeGUID(guid string) (mac string, ok bool) {
	g, err := gid.ParseGUID(guid)
	if err != nil {
		return "", false
	}
	hw, ok := g.MAC()
	if !ok {
		return "", false
	}
	return hw.String(), true
}

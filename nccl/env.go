package nccl

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/internal/ncclver"
	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// EnvVar is one variable of the advised NCCL environment, with why.
type EnvVar struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// EnvAdvice is the NCCL environment a host should use. Its JSON names are
// the public schema of `erdmakit nccl env --json`.
type EnvAdvice struct {
	Vars []EnvVar `json:"vars"`
	// Warnings are problems the environment cannot fix (a crashing NCCL
	// version, a low memlock limit, an inactive port), each with its fix.
	Warnings []string `json:"warnings"`
	// NCCLVersions are the installed NCCL versions that were seen.
	NCCLVersions []NCCLInstall `json:"nccl_versions,omitempty"`
	// Graph is the graph file this host should use (two or more eRDMA
	// NICs and a known GPU count, see PlanGraph); nil otherwise. It is
	// exported as NCCL_GRAPH_FILE when EnvOptions.GraphFile names where
	// it is written.
	Graph *Graphs `json:"graph,omitempty"`
	// Notes are advice that needs a choice from the user (not a problem).
	Notes []string `json:"notes,omitempty"`
	// GraphOrder is the net dev order Graph's ids follow: OrderPCI or
	// OrderList (see NetDevOrder); "" without a graph.
	GraphOrder string `json:"graph_order,omitempty"`
}

// Net dev orders (EnvAdvice.GraphOrder).
const (
	OrderPCI  = "pci"  // by PCI bus id: NCCL >= 2.29.7
	OrderList = "list" // libibverbs' device list: older NCCL
)

// OrderOf is the net dev order of NCCL version (PCIOrder).
func OrderOf(version string) string {
	if PCIOrder(version) {
		return OrderPCI
	}
	return OrderList
}

// GDRMode says whether NCCL_NET_GDR_LEVEL should be advised.
type GDRMode string

const (
	// GDRAuto advises GDR when nvidia_peermem (or an equivalent) is ready
	// and the GPU<->NIC distance is SYS.
	GDRAuto GDRMode = ""
	// GDROff never advises GDR.
	GDROff GDRMode = "off"
	// GDROn advises NCCL_NET_GDR_LEVEL=SYS whatever the inventory says
	// (warning when peermem is not ready).
	GDROn GDRMode = "on"
)

// EnvOptions tune AdviseEnv.
type EnvOptions struct {
	// NCCL lists the installed NCCL versions (DetectNCCL, or a flag).
	NCCL []NCCLInstall
	// SocketIfname overrides the choice of the bootstrap interface.
	SocketIfname string
	GDR          GDRMode
	// GraphFile is the path (the same on every host) where the caller
	// writes Advice.Graph; "" means no NCCL_GRAPH_FILE is advised.
	GraphFile string
}

// AdviseEnv derives the NCCL environment from a host's inventory. It is a
// pure function: the same inventory and options give the same advice.
func AdviseEnv(inv *erdma.Inventory, opts EnvOptions) *EnvAdvice {
	a := &EnvAdvice{Vars: []EnvVar{}, Warnings: []string{}, NCCLVersions: opts.NCCL}
	if inv == nil {
		a.warn("no inventory: nothing to derive the NCCL environment from")
		return a
	}
	a.socketIfname(inv, opts.SocketIfname)
	ver := a.orderVersion(opts.NCCL, opts.GraphFile)
	devs := a.hca(inv, ver)
	a.gidIndex(inv, devs, opts.NCCL)
	a.gdr(inv, devs, opts.GDR, opts.GraphFile != "" && a.graphPlanned(inv, ver))
	a.graph(inv, opts.GraphFile, ver)
	if inv.Memlock != nil && !inv.Memlock.Unlimited {
		a.warn(fmt.Sprintf("locked-memory limit is %s (soft), not unlimited: NCCL's ibv_create_qp fails with ENOMEM "+
			"('Unknown error -12'); run ulimit -l unlimited, LimitMEMLOCK=infinity for systemd/containerd services",
			units.Format(int64(inv.Memlock.Soft), units.Text)))
	}
	for _, n := range opts.NCCL {
		if ncclog.CrashingNCCL(n.Version) {
			a.warn(fmt.Sprintf("NCCL %s (%s) segfaults in ncclNetInit on eRDMA: use 2.28.3 or 2.29.7 and later", n.Version, n.Path))
		}
	}
	return a
}

func (a *EnvAdvice) set(name, value, reason string) {
	a.Vars = append(a.Vars, EnvVar{Name: name, Value: value, Reason: reason})
}

func (a *EnvAdvice) warn(s string) { a.Warnings = append(a.Warnings, s) }

// setValue changes the value of an advised variable and adds to its reason.
func (a *EnvAdvice) setValue(name, value, why string) {
	for i := range a.Vars {
		if a.Vars[i].Name == name {
			a.Vars[i].Value = value
			a.Vars[i].Reason += why
		}
	}
}

// graph advises the multi-NIC graph file: NCCL puts every GPU on the first
// of two NICs at equal distance (the runbook's finding).
func (a *EnvAdvice) graph(inv *erdma.Inventory, path, version string) {
	p, err := a.planGraph(inv, version)
	if err != nil {
		if path != "" {
			a.warn("NCCL_GRAPH_FILE not set: " + strings.TrimPrefix(err.Error(), ErrGraph.Error()+": "))
		}
		return
	}
	g, err := MultiNICGraph(p)
	if err != nil {
		if path != "" {
			a.warn("NCCL_GRAPH_FILE not set: " + err.Error())
		}
		return
	}
	a.Graph, a.GraphOrder = g, OrderOf(version)
	what := fmt.Sprintf("%d eRDMA NICs (%s) at equal distance: NCCL puts every GPU on the first", len(p.NICs), strings.Join(p.NICs, ", "))
	if path == "" {
		a.Notes = append(a.Notes, what+"; --graph-file PATH writes a graph giving each NIC a channel with all "+
			strconv.Itoa(len(p.GPUs))+" GPUs (NCCL_GRAPH_FILE, runbook)")
		return
	}
	a.set("NCCL_GRAPH_FILE", path, fmt.Sprintf("%s; this graph gives channel i to net dev i (%s, in "+NetDevOrderName(version)+"), all %d GPUs in each "+
		"(run %d ranks per host). Every communicator reads it: one with fewer GPUs per host (a split, a sub-communicator, "+
		"a 1-GPU test) fails init with 'XML Import Channel : dev N not found', so unset it for those",
		what, strings.Join(p.NICs, ", "), len(p.GPUs), len(p.GPUs)))
}

// graphPlanned reports whether the host gets a graph file (PlanGraph and
// MultiNICGraph succeed, and NCCL_IB_HCA names the plan's NICs).
func (a *EnvAdvice) graphPlanned(inv *erdma.Inventory, version string) bool {
	p, err := a.planGraph(inv, version)
	if err != nil {
		return false
	}
	_, err = MultiNICGraph(p)
	return err == nil
}

// planGraph is PlanGraph, refused when the advice's NCCL_IB_HCA leaves some
// of the plan's NICs out (an NCCL too old for differing GID indexes).
func (a *EnvAdvice) planGraph(inv *erdma.Inventory, version string) (GraphPlan, error) {
	p, err := PlanGraph(inv, version)
	if err != nil {
		return p, err
	}
	if hca, ok := a.Get("NCCL_IB_HCA"); ok && !slices.Equal(HCANames(hca), p.NICs) {
		return p, fmt.Errorf("%w: NCCL_IB_HCA=%s does not name every eRDMA NIC (%s)", ErrGraph, hca, strings.Join(p.NICs, ", "))
	}
	return p, nil
}

// orderVersion is the NCCL version whose net dev order the advice follows:
// the installed (or --nccl-version) one; "" when none is known (taken as
// current, PCIOrder). Installed versions that number the devices
// differently are warned about when a graph file is written (its net dev
// ids fit one order), and the newest is followed.
func (a *EnvAdvice) orderVersion(ns []NCCLInstall, graphFile string) string {
	newest, pci, list := "", 0, 0
	for _, n := range ns {
		if n.Version == "" {
			continue
		}
		if newest == "" || ncclver.Less(newest, n.Version) {
			newest = n.Version
		}
		if PCIOrder(n.Version) {
			pci++
		} else {
			list++
		}
	}
	if pci > 0 && list > 0 && graphFile != "" {
		a.warn(fmt.Sprintf("NCCL versions before and after %s are installed: they number the eRDMA devices differently "+
			"(libibverbs' order, PCI bus id order), so the graph file's net dev ids fit only one; the advice follows %s: "+
			"give the NCCL that runs with --nccl-version", PCIOrderMinNCCL, newest))
	}
	return newest
}

// Get returns the advised value of name and whether it is set.
func (a *EnvAdvice) Get(name string) (string, bool) {
	for _, v := range a.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

func (a *EnvAdvice) socketIfname(inv *erdma.Inventory, override string) {
	if override != "" {
		a.set("NCCL_SOCKET_IFNAME", override, "given on the command line")
		return
	}
	var best *erdma.Netdev
	for i := range inv.Netdevs {
		n := &inv.Netdevs[i]
		if n.Name == "lo" || len(n.IPv4) == 0 || (n.OperState != "up" && n.OperState != "unknown") {
			continue
		}
		if n.Name == "eth0" {
			best = n
			break
		}
		if best == nil || n.Name < best.Name {
			best = n
		}
	}
	if best == nil {
		a.warn("no interface is up with an IPv4 address: set NCCL_SOCKET_IFNAME to the interface the hosts reach each other on")
		return
	}
	why := "the primary interface"
	if best.Name != "eth0" {
		why = "the first interface up with an IPv4 address (no eth0)"
	}
	a.set("NCCL_SOCKET_IFNAME", best.Name, fmt.Sprintf("%s (%s): NCCL's bootstrap and out-of-band traffic", why, strings.Join(best.IPv4, ", ")))
}

// hca picks the eRDMA devices NCCL should use and returns them, in the
// net dev order of NCCL version (see NetDevOrder).
func (a *EnvAdvice) hca(inv *erdma.Inventory, version string) []erdma.Device {
	var all, usable []erdma.Device
	for _, d := range inv.Devices {
		if !d.ERDMA {
			continue
		}
		all = append(all, d)
		switch {
		case d.Transport == erdma.TransportIWARP:
			a.warn(fmt.Sprintf("%s is in iWARP mode (node_type %q): NCCL's IB transport cannot connect it; "+
				"load the erdma driver in compat mode (compat_mode=1) on every host", d.Name, d.NodeType))
		case activePort(d) == nil:
			a.warn(fmt.Sprintf("%s has no ACTIVE port: configure its netdev %s with an IPv4 address and bring it up "+
				"(guide steps 3-4), then check ibv_devinfo", d.Name, orUnknown(d.Netdev)))
		default:
			usable = append(usable, d)
		}
	}
	if len(all) == 0 {
		a.warn("no eRDMA device (driver erdma, PCI 1ded:107f) in sys/class/infiniband: NCCL would fall back to sockets; " +
			"attach an ERI and install the eRDMA driver (guide steps 1-2)")
		return nil
	}
	if len(usable) == 0 {
		return nil
	}
	// Listed in NCCL's net dev order (NetDevOrder), so net dev i is the
	// i-th name; NCCL itself ignores the order of the names here.
	NetDevOrder(usable, version)
	desc := make([]string, len(usable))
	for i, d := range usable {
		desc[i] = fmt.Sprintf("%s (netdev %s)", d.Name, orUnknown(d.Netdev))
	}
	a.set("NCCL_IB_HCA", IBHCA(usable), "the eRDMA devices with an ACTIVE port: "+strings.Join(desc, ", ")+
		"; '=' makes NCCL match each name exactly (without it erdma_1 also matches erdma_10: src/transport/net_ib/init.cc "+
		"searchExact), ':N' the port")
	return usable
}

// IBHCA is NCCL_IB_HCA naming exactly devs, each at its ACTIVE port (or
// port 1): "=erdma_0:1,erdma_1:1". Without the leading '=' NCCL matches
// names by prefix (src/transport/net_ib/init.cc at 5067397, lines 322-323:
// searchExact; matchIfList in src/misc/utils.cc), so erdma_1 would also
// take erdma_10.
func IBHCA(devs []erdma.Device) string {
	parts := make([]string, len(devs))
	for i, d := range devs {
		port := 1
		if p := activePort(d); p != nil && p.Number > 0 {
			port = p.Number
		}
		parts[i] = fmt.Sprintf("%s:%d", d.Name, port)
	}
	return "=" + strings.Join(parts, ",")
}

// HCANames are the device names an NCCL_IB_HCA value lists, without its
// '^' or '=' prefix and ':port' suffixes.
func HCANames(v string) []string {
	v = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "^"), "=")
	var out []string
	for _, f := range strings.Split(v, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(f), ":")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// usableDevices are the eRDMA devices NCCL can use (not in iWARP mode,
// with an ACTIVE port) in NCCL version's net dev order (NetDevOrder).
func usableDevices(inv *erdma.Inventory, version string) []erdma.Device {
	var out []erdma.Device
	for _, d := range inv.Devices {
		if d.ERDMA && d.Transport != erdma.TransportIWARP && activePort(d) != nil {
			out = append(out, d)
		}
	}
	NetDevOrder(out, version)
	return out
}

// PCIOrderMinNCCL is the first NCCL that numbers its IB net devices by PCI
// bus id: NCCL_PARAM(IbDevicePciOrder, "IB_DEVICE_PCI_ORDER", 1) and the
// qsort by ncclIbCompareDevs (src/transport/net_ib/init.cc at 5067397,
// lines 30, 44-58 and 484; added in 56a0c229, NCCL 2.29.7-1). Before, net
// dev i was the i-th device of ibv_get_device_list.
const PCIOrderMinNCCL = "2.29.7"

// PCIOrder reports whether NCCL version numbers its IB net devices by PCI
// bus id (NCCL >= 2.29.7 with NCCL_IB_DEVICE_PCI_ORDER unset or 1). An
// unknown version ("") is taken as a current one: erdmakit recommends
// 2.29.7 and later.
func PCIOrder(version string) bool {
	return version == "" || !ncclver.Less(version, PCIOrderMinNCCL)
}

// NetDevOrderName says in words the net dev order of NCCL version.
func NetDevOrderName(version string) string {
	v := "NCCL " + version
	if version == "" {
		v = "NCCL (version unknown: taken as >= " + PCIOrderMinNCCL + ")"
	}
	if PCIOrder(version) {
		return v + "'s order: by PCI bus id (NCCL >= " + PCIOrderMinNCCL + ", NCCL_IB_DEVICE_PCI_ORDER=1)"
	}
	return v + "'s order: libibverbs' device list (NCCL < " + PCIOrderMinNCCL + ")"
}

// NetDevOrder sorts devs into the order NCCL version numbers its IB net
// devices, the devices NCCL_IB_HCA keeps (the order of the names in
// NCCL_IB_HCA does not matter; src/transport/net_ib/init.cc
// ncclIbInitDevices):
//   - NCCL >= 2.29.7 (PCIOrder; also an unknown version): by PCI bus id,
//     devices without a PCI path last (ncclIbCompareDevs).
//   - older: ibv_get_device_list's order, the kernel's registration order
//     (rdma-core libibverbs/init.c ibverbs_get_device_list, from the
//     netlink dump by device index). What a host root shows of that order
//     is the uverbs char device number, given at registration (uverbsN,
//     lowest free); then the PCI address (the order the driver probes at
//     boot); then the name.
func NetDevOrder(devs []erdma.Device, version string) {
	uverbs := func(d erdma.Device) int {
		n, err := strconv.Atoi(strings.TrimPrefix(d.UVerbs, "uverbs"))
		if err != nil || !strings.HasPrefix(d.UVerbs, "uverbs") {
			return math.MaxInt
		}
		return n
	}
	pci := PCIOrder(version)
	sort.SliceStable(devs, func(i, j int) bool {
		a, b := devs[i], devs[j]
		if pci {
			pa, pb := strings.ToLower(a.PCIAddress), strings.ToLower(b.PCIAddress)
			if (pa == "") != (pb == "") {
				return pb == "" // no PCI path: last
			}
			return pa < pb
		}
		if ua, ub := uverbs(a), uverbs(b); ua != ub {
			return ua < ub
		}
		if a.PCIAddress != b.PCIAddress {
			return a.PCIAddress < b.PCIAddress
		}
		return a.Name < b.Name
	})
}

func activePort(d erdma.Device) *erdma.Port {
	for i := range d.Ports {
		if d.Ports[i].StateCode == 4 || strings.EqualFold(d.Ports[i].State, "ACTIVE") {
			return &d.Ports[i]
		}
	}
	return nil
}

// GIDAutoMinNCCL is the first NCCL that takes NCCL_IB_GID_INDEX=-1 (pick
// the GID by NCCL_IB_ADDR_FAMILY, NCCL_IB_ROCE_VERSION_NUM and
// NCCL_IB_ADDR_RANGE: ncclIbGetGidIndex, src/transport/net_ib.cc of
// v2.21.5-1, where -1 also became the default). Older releases pass the
// number to ibv_query_gid and the QP's sgid_index as it is (v2.20.5-1:
// NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", 0)), so -1 there is no GID.
const GIDAutoMinNCCL = "2.21.5"

// ncclDefaultNote: NCCL_IB_GID_INDEX=-1, NCCL_IB_ADDR_FAMILY=AF_INET and
// NCCL_IB_ROCE_VERSION_NUM=2 are NCCL's own defaults from 2.21.5 on
// (src/transport/net_ib/connect.cc at 5067397, lines 12, 14 and 102;
// src/transport/net_ib.cc of v2.21.5-1, lines 80, 81 and 108): they change
// nothing there and are written to say what NCCL does; NCCL_IB_GID_INDEX=-1
// only exists from 2.21.5 (older NCCL takes -1 as an index: no GID).
const ncclDefaultNote = "NCCL's default since " + GIDAutoMinNCCL + " (harmless there; said for the reader)"

// oldestNCCL is the oldest of the installed NCCL versions, "" when none
// is known.
func oldestNCCL(ns []NCCLInstall) string {
	oldest := ""
	for _, n := range ns {
		if n.Version != "" && (oldest == "" || ncclver.Less(n.Version, oldest)) {
			oldest = n.Version
		}
	}
	return oldest
}

// gidIndex advises NCCL_IB_GID_INDEX: the RoCE v2 IPv4 entry when every
// device has it at the same index; -1 with the address filters when they
// differ and NCCL >= 2.21.5 (or the version is unknown: the requirement is
// then said); with an older NCCL, which takes one index for every device,
// the first device's index and only the devices that share it.
func (a *EnvAdvice) gidIndex(inv *erdma.Inventory, devs []erdma.Device, ncclVersions []NCCLInstall) {
	if len(devs) == 0 {
		return
	}
	idx := map[int][]string{}
	byDev := make([]int, len(devs))
	for k, d := range devs {
		i := activePort(d).RecommendedGIDIndex
		if i < 0 {
			a.warn(fmt.Sprintf("%s has no RoCE v2 GID holding its netdev's IPv4 (::ffff:a.b.c.d): "+
				"give %s an IPv4 address (guide step 3)", d.Name, orUnknown(d.Netdev)))
			i = -1
		}
		byDev[k] = i
		idx[i] = append(idx[i], fmt.Sprintf("%s: %d", d.Name, i))
	}
	if len(idx) == 1 {
		for i, who := range idx {
			if i >= 0 {
				a.set("NCCL_IB_GID_INDEX", strconv.Itoa(i),
					"the RoCE v2 GID of the netdev's IPv4 on every eRDMA device ("+strings.Join(who, ", ")+")")
			}
		}
		return
	}
	var who []string
	for _, w := range idx {
		who = append(who, w...)
	}
	sort.Strings(who)
	if old := oldestNCCL(ncclVersions); old != "" && ncclver.Less(old, GIDAutoMinNCCL) && byDev[0] >= 0 {
		// One index for every device: keep the devices that share the
		// first one's, name the others.
		first := byDev[0]
		var keep, drop []string
		var kept []erdma.Device
		for k, d := range devs {
			if byDev[k] == first {
				keep = append(keep, d.Name)
				kept = append(kept, d)
			} else {
				drop = append(drop, d.Name)
			}
		}
		a.setValue("NCCL_IB_HCA", IBHCA(kept), fmt.Sprintf("; NCCL %s: only those at GID index %d", old, first))
		a.set("NCCL_IB_GID_INDEX", strconv.Itoa(first), fmt.Sprintf("NCCL %s predates %s, which takes one GID index for every device "+
			"(no -1): the index of %s (%s)", old, GIDAutoMinNCCL, strings.Join(keep, ", "), strings.Join(who, ", ")))
		a.warn(fmt.Sprintf("NCCL %s takes one NCCL_IB_GID_INDEX for every device and the eRDMA devices' IPv4 GIDs differ (%s): "+
			"NCCL_IB_HCA leaves out %s; use NCCL >= %s (NCCL_IB_GID_INDEX=-1 picks each device's GID) to use every device",
			old, strings.Join(who, ", "), strings.Join(drop, ", "), GIDAutoMinNCCL))
		return
	}
	reason := "the eRDMA devices use different GID indexes (" + strings.Join(who, ", ") + "): let NCCL pick the GID by address"
	if oldestNCCL(ncclVersions) == "" {
		reason += " (needs NCCL >= " + GIDAutoMinNCCL + "; older NCCL takes the number as it is: see the note)"
		a.Notes = append(a.Notes, "NCCL_IB_GID_INDEX=-1 needs NCCL >= "+GIDAutoMinNCCL+" (the NCCL version was not found: "+
			"--nccl-version tells it); with an older NCCL use one device per job with its own index ("+strings.Join(who, ", ")+")")
	}
	a.set("NCCL_IB_GID_INDEX", "-1", reason+"; "+ncclDefaultNote)
	a.set("NCCL_IB_ADDR_FAMILY", "AF_INET", "with NCCL_IB_GID_INDEX=-1: use the IPv4 GIDs; "+ncclDefaultNote)
	a.set("NCCL_IB_ROCE_VERSION_NUM", "2", "with NCCL_IB_GID_INDEX=-1: use the RoCE v2 GIDs; "+ncclDefaultNote)
	prefix, err := coveringPrefix(inv, devs)
	if err != nil {
		a.warn("NCCL_IB_ADDR_RANGE not set: " + err.Error())
		return
	}
	a.set("NCCL_IB_ADDR_RANGE", prefix.String(), "the subnet covering the eRDMA netdevs' IPv4 addresses")
}

// coveringPrefix is the smallest IPv4 prefix that holds every eRDMA
// netdev's subnet.
func coveringPrefix(inv *erdma.Inventory, devs []erdma.Device) (netip.Prefix, error) {
	var nets []netip.Prefix
	for _, d := range devs {
		nd := findNetdev(inv, d.Netdev)
		if nd == nil {
			return netip.Prefix{}, fmt.Errorf("the netdev of %s is not known", d.Name)
		}
		for _, c := range nd.IPv4 {
			p, err := netip.ParsePrefix(c)
			if err != nil || !p.Addr().Is4() {
				return netip.Prefix{}, fmt.Errorf("netdev %s: IPv4 %q is not a CIDR", nd.Name, c)
			}
			nets = append(nets, p.Masked())
		}
	}
	if len(nets) == 0 {
		return netip.Prefix{}, fmt.Errorf("the eRDMA netdevs have no IPv4 address")
	}
	bits := nets[0].Bits()
	first := nets[0].Addr().As4()
	for _, p := range nets[1:] {
		bits = min(bits, p.Bits(), commonBits(first, p.Addr().As4()))
	}
	return netip.PrefixFrom(nets[0].Addr(), bits).Masked(), nil
}

func commonBits(a, b [4]byte) int {
	x := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	y := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0
	for d := x ^ y; n < 32 && d&(1<<31) == 0; d <<= 1 {
		n++
	}
	return n
}

func findNetdev(inv *erdma.Inventory, name string) *erdma.Netdev {
	if name == "" {
		return nil
	}
	for i := range inv.Netdevs {
		if inv.Netdevs[i].Name == name {
			return &inv.Netdevs[i]
		}
	}
	return nil
}

// gdr advises NCCL_NET_GDR_LEVEL from erdma.DecideGDRLevel (in NCCL's path
// words); with a graph file exported, erdma.GDRLevel.WithGraph (SYS).
func (a *EnvAdvice) gdr(inv *erdma.Inventory, devs []erdma.Device, mode GDRMode, graph bool) {
	if mode == GDROff || len(devs) == 0 {
		return
	}
	g := inv.GPU
	if mode == GDROn {
		reason := "GPUDirect RDMA asked for on the command line"
		if g == nil || g.GDRPath == "" {
			a.warn("NCCL_NET_GDR_LEVEL=SYS without a GPUDirect RDMA path (nvidia_peermem or DMA-BUF): NCCL reports 'GPU Direct RDMA Disabled'; " +
				"modprobe nvidia_peermem" + dmabufAlternative(g))
		}
		a.set("NCCL_NET_GDR_LEVEL", "SYS", reason)
		return
	}
	lvl := erdma.DecideGDRLevel(g) // the one rule the doctor shares
	if graph {
		lvl = lvl.WithGraph()
	}
	if g == nil || !g.Available {
		why := "no GPU facts"
		if g != nil && g.Reason != "" {
			why = g.Reason
		}
		if m := peerMemModule(inv); m != "" {
			a.set("NCCL_NET_GDR_LEVEL", lvl.Level, fmt.Sprintf("%s is loaded; %s", m, lvl.Reason))
			return
		}
		a.warn("NCCL_NET_GDR_LEVEL not decided (" + why + ", nvidia_peermem not loaded); " +
			"on eRDMA GPU hosts: modprobe nvidia_peermem, then NCCL_NET_GDR_LEVEL=" + lvl.Level)
		return
	}
	if g.GDRPath == "" {
		next := "then NCCL_NET_GDR_LEVEL=" + lvl.Level
		if lvl.Level == "" {
			next = "NCCL's default GDR level then covers every GPU"
		}
		a.warn("GPUDirect RDMA is not ready (no nvidia_peermem/nv_peer_mem, DMA-BUF " + orUnknown(g.DMABUF) + "): NCCL copies through host memory; " +
			"modprobe nvidia_peermem (again after every reboot)" + dmabufAlternative(g) + "; " + next)
		return
	}
	if lvl.Level == "" {
		return // within PXB: NCCL's default level already uses GDR
	}
	a.set("NCCL_NET_GDR_LEVEL", lvl.Level, fmt.Sprintf("GPUDirect RDMA is ready through %s and %s", gdrPathName(g.GDRPath), lvl.Reason))
}

// dmabufAlternative is the DMA-BUF way to GPUDirect RDMA, as a clause
// after "modprobe nvidia_peermem"; where the RDMA provider registers no
// dma-buf (eRDMA: rdma-core's providers/erdma has no reg_dmabuf_mr), it
// says there is none.
func dmabufAlternative(g *erdma.GPUInfo) string {
	if g != nil && len(g.DMABUFRefusedBy) > 0 {
		return " (DMA-BUF is no alternative: the " + strings.Join(g.DMABUFRefusedBy, ", ") + " provider registers no dma-buf)"
	}
	return ", or DMA-BUF (kernel >= 5.12, the NVIDIA open kernel module, rdma-core >= 34, an RDMA provider with reg_dmabuf_mr)"
}

// gdrPathName names a GPUInfo.GDRPath for people.
func gdrPathName(p string) string {
	if p == "dmabuf" {
		return "DMA-BUF"
	}
	return p
}

// HostPeerMem is the peer-memory module inv's host has for GPUDirect RDMA
// ("nvidia_peermem", "nv_peer_mem", "memory_peers"), or "none"
// (Expectation.HostPeerMem).
func HostPeerMem(inv *erdma.Inventory) string {
	if inv == nil {
		return ""
	}
	if m := peerMemModule(inv); m != "" {
		return m
	}
	if inv.GPU != nil && inv.GPU.GDRPath != "" && inv.GPU.GDRPath != "dmabuf" {
		return inv.GPU.GDRPath
	}
	return "none"
}

// peerMemModule returns the loaded GPUDirect RDMA module, "" if none.
func peerMemModule(inv *erdma.Inventory) string {
	for _, m := range inv.Modules {
		if m.Loaded && (m.Name == "nvidia_peermem" || m.Name == "nv_peer_mem") {
			return m.Name
		}
	}
	return ""
}

// Shell returns the advice as a shell snippet: each variable's reason as a
// comment, then "export NAME=VALUE"; warnings as comments at the top.
func (a *EnvAdvice) Shell() string {
	var b strings.Builder
	for _, w := range a.Warnings {
		b.WriteString("# WARNING: " + w + "\n")
	}
	for _, n := range a.Notes {
		b.WriteString("# note: " + n + "\n")
	}
	for _, v := range a.Vars {
		b.WriteString("# " + v.Reason + "\n")
		b.WriteString("export " + v.Name + "=" + shellQuote(v.Value) + "\n")
	}
	return b.String()
}

// MPIRunArgs returns the advice as mpirun arguments: "-x", "NAME=VALUE", ...
func (a *EnvAdvice) MPIRunArgs() []string {
	var out []string
	for _, v := range a.Vars {
		out = append(out, "-x", v.Name+"="+v.Value)
	}
	return out
}

// CommandVars returns the advice as Command.Env entries.
func (a *EnvAdvice) CommandVars() []Var {
	out := make([]Var, len(a.Vars))
	for i, v := range a.Vars {
		out[i] = Var{Name: v.Name, Value: v.Value}
	}
	return out
}

// NCCLInstall is one NCCL library seen on a host.
type NCCLInstall struct {
	Version string `json:"version"` // "2.21.5"
	Path    string `json:"path"`    // relative to the host root
}

var (
	ncclSOName    = regexp.MustCompile(`^libnccl\.so\.(\d+\.\d+\.\d+)$`)
	ncclWheelName = regexp.MustCompile(`^nvidia_nccl_cu\d+-(\d+\.\d+\.\d+)(\.\w+)?\.dist-info$`)
)

// ncclLibDirs are where NCCL is installed, relative to the host root.
var ncclLibDirs = []string{
	"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
	"usr/local/lib", "usr/local/lib64", "usr/local/cuda/lib64", "usr/local/cuda/lib",
	"usr/local/cuda/targets/x86_64-linux/lib", "usr/local/nccl/lib", "opt/nccl/lib", "opt/nccl/build/lib",
}

// ncclWheelGlobs are where pip puts nvidia-nccl-cu12 (PyTorch's NCCL).
var ncclWheelGlobs = []string{
	"usr/lib/python3*/site-packages", "usr/lib/python3*/dist-packages",
	"usr/local/lib/python3*/site-packages", "usr/local/lib/python3*/dist-packages",
	"usr/lib64/python3*/site-packages", "opt/conda/lib/python3*/site-packages",
}

// DetectNCCL lists the NCCL libraries under a host root ("/" for this
// host) by their file names: libnccl.so.2.X.Y in the usual library
// directories (or the target of a libnccl.so.2 symlink there, read as a
// path under root) and nvidia_nccl_cu*-X.Y.Z.dist-info wheels. Unreadable
// directories are skipped; the result is sorted by path. It stops reading
// when ctx ends (what was found by then is returned).
func DetectNCCL(ctx context.Context, root string) []NCCLInstall {
	var out []NCCLInstall
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return nil
	}
	defer r.Close()
	seen := map[string]bool{}
	// add takes a path relative to the root.
	add := func(v, rel string) {
		rel = path.Clean(rel)
		if !seen[rel] {
			seen[rel] = true
			out = append(out, NCCLInstall{Version: v, Path: rel})
		}
	}
	for _, d := range ncclLibDirs {
		ents, err := r.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if m := ncclSOName.FindStringSubmatch(e.Name()); m != nil {
				add(m[1], path.Join(d, e.Name()))
				continue
			}
			if e.Name() != "libnccl.so.2" || e.Type()&os.ModeSymlink == 0 {
				continue
			}
			// libnccl.so.2 -> somewhere/libnccl.so.2.X.Y: the target's
			// name carries the version even when it lives elsewhere.
			target, err := r.Readlink(path.Join(d, e.Name()))
			if err != nil {
				continue
			}
			if m := ncclSOName.FindStringSubmatch(path.Base(target)); m != nil {
				if !path.IsAbs(target) {
					target = path.Join(d, target)
				}
				add(m[1], strings.TrimPrefix(path.Clean("/"+target), "/"))
			}
		}
	}
	for _, g := range ncclWheelGlobs {
		dirs, _ := r.Glob(g)
		for _, d := range dirs {
			ents, err := r.ReadDir(d)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if m := ncclWheelName.FindStringSubmatch(e.Name()); m != nil {
					add(m[1], path.Join(d, e.Name()))
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

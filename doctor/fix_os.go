package doctor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/hostconf"
	"github.com/erdmakit/erdmakit/internal/netdev"
	"github.com/erdmakit/erdmakit/internal/shq"
)

// How a host persists its network configuration; the os stage writes
// exactly one of them, in that system's own format.
const (
	StackNetworkManager = "networkmanager" // keyfile in /etc/NetworkManager/system-connections
	StackNetplan        = "netplan"        // /etc/netplan/*.yaml (Ubuntu)
	StackIfcfg          = "ifcfg"          // /etc/sysconfig/network-scripts/ifcfg-* (Alibaba Cloud Linux, CentOS)
	StackNetworkd       = "networkd"       // /etc/systemd/network/*.network
)

// ErrNoNetworkStack: none of the four ways to persist network configuration
// was found.
var ErrNoNetworkStack = errors.New("no known network configuration system")

// DetectNetworkStack says how the host under root ("" or "/": this host)
// persists its network configuration, and the evidence. netplan first (it
// renders to NetworkManager or networkd, which must not be written behind
// its back), then ifcfg files (read by NetworkManager's ifcfg-rh plugin or
// network-scripts), then NetworkManager, then systemd-networkd. Everything
// is read inside root.
func DetectNetworkStack(root string) (stack, why string, err error) {
	return detectNetworkStack(&hostconf.Files{Root: root})
}

func detectNetworkStack(files *hostconf.Files) (stack, why string, err error) {
	has := func(dir, suffix string, skip ...string) string {
		ents, err := files.List(dir)
		if err != nil {
			return ""
		}
		for _, e := range ents {
			if strings.HasSuffix(e, suffix) && !slices.Contains(skip, e) {
				return path.Join(dir, e)
			}
		}
		return ""
	}
	if f := has("/etc/netplan", ".yaml"); f != "" {
		return StackNetplan, f + " exists", nil
	}
	if f := has("/etc/sysconfig/network-scripts", "", "ifcfg-lo"); f != "" && strings.Contains(f, "ifcfg-") {
		return StackIfcfg, f + " exists", nil
	}
	for _, f := range []string{"/etc/systemd/system/multi-user.target.wants/NetworkManager.service", "/etc/systemd/system/dbus-org.freedesktop.nm-dispatcher.service"} {
		if files.Exists(f) {
			return StackNetworkManager, f + " exists (NetworkManager enabled)", nil
		}
	}
	if f := has("/etc/NetworkManager/system-connections", ""); f != "" {
		return StackNetworkManager, f + " exists", nil
	}
	for _, f := range []string{"/etc/systemd/system/multi-user.target.wants/systemd-networkd.service", "/etc/systemd/system/dbus-org.freedesktop.network1.service"} {
		if files.Exists(f) {
			return StackNetworkd, f + " exists (systemd-networkd enabled)", nil
		}
	}
	if f := has("/etc/systemd/network", ".network"); f != "" {
		return StackNetworkd, f + " exists", nil
	}
	return "", "", fmt.Errorf("%w: no /etc/netplan/*.yaml, ifcfg file, NetworkManager or systemd-networkd found", ErrNoNetworkStack)
}

// eri is one ERI netdev as the os stage wants it.
type eri struct {
	name, mac string
	addr      *net.IPNet // the address with its subnet's prefix
	gateway   net.IP
	mtu       int
	metric    int
	// hostPrefix: the address is configured as /32 and the subnet route
	// given explicitly (netplan, ifcfg: neither can say noprefixroute).
	hostPrefix bool
}

func (e eri) subnet() *net.IPNet {
	return &net.IPNet{IP: e.addr.IP.Mask(e.addr.Mask), Mask: e.addr.Mask}
}

func (e eri) config() netdev.Config {
	return netdev.Config{Name: e.name, Addr: e.addr, Gateway: e.gateway, MTU: e.mtu, Metric: e.metric, HostPrefix: e.hostPrefix}
}

// osFix: guide step 3 and the MTU guide. Every ERI netdev up with its
// address, its routes above the primary ENI's metric (the kernel's prefix
// route at metric 0 would compete with eth0's in the same vSwitch: the
// address is added with noprefixroute, or as /32 where the configuration
// system cannot say that, and the subnet route given at the ERI's metric,
// as Alibaba's erdma-controller does), one MTU for all ERIs by the
// instance's jumbo-frame setting (erdma.ERIMTU), and all of it persisted in
// the host's own network configuration system so that it is right at boot
// without setup.
func osFix() *Fix {
	return &Fix{Stage: StageOS, Title: "ERI netdevs up with address, routes and MTU, persisted", Plan: planOS}
}

// eriNames are the netdevs the os stage configures, validated.
func eriNames(inv *erdma.Inventory, env *FixEnv) ([]string, error) {
	names := env.Netdevs
	if len(names) == 0 {
		for _, d := range inv.Devices {
			if d.ERDMA && d.Netdev != "" && !slices.Contains(names, d.Netdev) {
				names = append(names, d.Netdev)
			}
		}
	}
	if len(names) > 64 {
		return nil, fmt.Errorf("%d netdevs: at most 64: %w", len(names), ErrInvalidValue)
	}
	for _, n := range names {
		if err := netdev.ValidName(n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// eriMTU is the one MTU of every ERI of the instance: 8500 with jumbo
// frames, 1400 without; unknown, 8500 only when every ERI has it already.
func eriMTU(p *Plan, in *Input, names []string) int {
	inv := in.Inventory
	want := erdma.ERIMTU(inv.Instance)
	if want == 0 && in.jumbo != nil {
		// --jumbo-frames gives the fact when the instance is unknown.
		want = erdma.ERIMTU(&erdma.Instance{JumboFrames: in.jumbo})
	}
	switch want {
	case erdma.MTUJumbo:
		p.Found = append(p.Found, "instance has jumbo frames: MTU 8500")
	case erdma.MTUSmall:
		p.Found = append(p.Found, "instance has no jumbo frames: MTU 1400")
	default:
		want = erdma.MTUJumbo
		for _, n := range names {
			if nd := netdevOf(inv, n); nd == nil || nd.MTU != erdma.MTUJumbo {
				want = erdma.MTUSmall
			}
		}
		p.Found = append(p.Found, fmt.Sprintf("jumbo frames unknown (no EnableJumboFrame): one MTU for all ERIs, %d (8500 only when every ERI has it already)", want))
	}
	return want
}

func planOS(ctx context.Context, in *Input, env *FixEnv) (*Plan, error) {
	p := NewPlan(StageOS)
	inv := in.Inventory
	names, err := eriNames(inv, env)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		p.Found = append(p.Found, "no ERI netdev (no eRDMA device with a paired netdev)")
		if inv.Profile != nil {
			p.Blocked = "no ERI netdev to configure"
			p.Next = "attach the ERIs (erdmakit setup's cloud stage, or erdmakit eri attach) and load the erdma driver; then rerun erdmakit setup"
		}
		return p, nil
	}
	eris, err := erisOf(inv, names)
	if err != nil {
		return nil, err
	}
	files := env.files(in)
	stack := osStack(p, env, files)
	if err := planLinks(ctx, p, in, env, eris, stack); err != nil {
		return nil, err
	}
	if p.Blocked != "" || stack == "" {
		return p, nil
	}
	return p, planOSFiles(p, files, stack, eris)
}

// erisOf is each named ERI netdev with its MAC, checked as a MAC before
// anything is planned with it.
func erisOf(inv *erdma.Inventory, names []string) ([]eri, error) {
	eris := make([]eri, len(names))
	for i, name := range names {
		nd := netdevOf(inv, name)
		if nd == nil {
			return nil, fmt.Errorf("%s: no such netdev on this host", name)
		}
		mac, err := netdev.ValidMAC(nd.MAC)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		eris[i] = eri{name: name, mac: mac}
	}
	return eris, nil
}

// osStack is how the host persists its network: the one asked for, else
// the one detected; "" (and p blocked, unless describing) when it cannot be
// told.
func osStack(p *Plan, env *FixEnv, files *hostconf.Files) string {
	stack, why := env.NetworkStack, "asked for"
	if stack == "" {
		var err error
		if stack, why, err = detectNetworkStack(files); err != nil && !env.Describe {
			// Nothing is applied: a configuration lost at the next boot is
			// what this stage exists to prevent.
			p.Blocked = err.Error()
			p.Next = "name how this host persists its network: --network-stack networkmanager, netplan, ifcfg or networkd"
		}
	}
	if stack != "" {
		p.Found = append(p.Found, "network configuration: "+stack+" ("+why+")")
	}
	return stack
}

// planLinks gives each ERI its MTU, route metric and address, and plans
// the live links' changes (or, describing, what each will get).
func planLinks(ctx context.Context, p *Plan, in *Input, env *FixEnv, eris []eri, stack string) error {
	inv := in.Inventory
	names := make([]string, len(eris))
	for i, e := range eris {
		names[i] = e.name
	}
	mtu := eriMTU(p, in, names)
	mtuKnown := erdma.ERIMTU(inv.Instance) != 0 || in.jumbo != nil
	live := in.Host.Live() && !env.Describe
	metric := netdev.MinMetric
	if live {
		metric = netdev.ERIMetric(nil, names)
	}
	if !in.Host.Live() && !env.Describe {
		p.Notes = append(p.Notes, NoLiveChanges)
	}
	for i := range eris {
		e := &eris[i]
		e.mtu, e.metric = mtu, metric+i
		e.hostPrefix = stack == StackNetplan || stack == StackIfcfg
		nd := netdevOf(inv, e.name)
		if err := addressOf(ctx, e, nd, env, live); err != nil {
			if live || errors.Is(err, ErrInvalidValue) {
				return err
			}
			// A recorded host or advice: the plan names what it lacks.
			if !env.Describe {
				p.Found = append(p.Found, err.Error())
			}
		}
		switch {
		case live:
			if err := planLink(p, *e); err != nil {
				return err
			}
		case env.Describe:
			planDescribed(p, *e, nd, mtuKnown)
		}
	}
	return nil
}

// planOSFiles plans the files that persist each addressed ERI for stack,
// blocked when another file would shadow erdmakit's.
func planOSFiles(p *Plan, files *hostconf.Files, stack string, eris []eri) error {
	for _, e := range eris {
		if e.addr == nil {
			continue
		}
		nf, err := netFiles(stack, e)
		if err != nil {
			return err
		}
		if by := shadowedBy(files, stack, e, nf[0].path); by != "" {
			p.Blocked = by
			p.Next = "move that file after erdmakit's in lexical order, or narrow its [Match] so that it leaves " + e.name + " alone; then rerun erdmakit setup"
			return nil
		}
		for _, f := range nf {
			if err := p.addFile(files, []string{erdma.FindingNetdevIP, erdma.FindingMTU}, f.path, f.body, f.tag, f.blockOK, f.perm); err != nil {
				return err
			}
		}
	}
	return nil
}

func netdevOf(inv *erdma.Inventory, name string) *erdma.Netdev {
	for i := range inv.Netdevs {
		if inv.Netdevs[i].Name == name {
			return &inv.Netdevs[i]
		}
	}
	return nil
}

// addressOf fills the ERI's address and gateway: the metadata service's,
// else the address the netdev has and the gateway of its default route.
// A value that is not what it must be (IPv4, a prefix, a gateway inside the
// subnet) is an error wrapping ErrInvalidValue, never configured.
func addressOf(ctx context.Context, e *eri, nd *erdma.Netdev, env *FixEnv, live bool) error {
	var mdErr error
	if !env.Describe {
		md := env.Metadata
		if md == nil {
			md = &erdma.MetadataClient{}
		}
		nc, err := md.NetConfig(ctx, e.mac)
		if errors.Is(err, erdma.ErrMetadataValue) {
			return fmt.Errorf("%s: %w: %w", e.name, ErrInvalidValue, err)
		}
		if err == nil {
			c, err := netdev.Parse(e.name, nc.Address, nc.Gateway, max(e.mtu, 68), e.metric)
			if err != nil {
				return fmt.Errorf("metadata for %s: %w", e.mac, err)
			}
			e.addr, e.gateway = c.Addr, c.Gateway
			return nil
		}
		mdErr = err
	}
	for _, a := range nd.IPv4 {
		if ip, n, err := net.ParseCIDR(a); err == nil && ip.To4() != nil && len(n.Mask) == net.IPv4len {
			if ones, _ := n.Mask.Size(); ones > 0 && ones < 32 {
				e.addr = &net.IPNet{IP: ip.To4(), Mask: n.Mask}
				break
			}
		}
	}
	if e.addr != nil && live {
		e.gateway = netdev.Gateway(nil, e.name, e.subnet())
	}
	if e.addr == nil || (live && e.gateway == nil) {
		if mdErr == nil {
			mdErr = errors.New("not asked")
		}
		return fmt.Errorf("%s (%s): no address to configure: the metadata service: %w", e.name, e.mac, mdErr)
	}
	return nil
}

// planDescribed plans from the inventory alone (the doctor's advice).
// Without the jumbo-frame fact the advice leaves the MTU to the mtu check's
// own words (8500 with jumbo frames, else 1400, one everywhere).
func planDescribed(p *Plan, e eri, nd *erdma.Netdev, mtuKnown bool) {
	addr := "<its address from the metadata service>"
	if e.addr != nil {
		addr = shq.Quote(e.addr.String())
	}
	dev := shq.Quote(e.name)
	if nd.MTU != e.mtu && mtuKnown {
		p.add(Change{Checks: []string{erdma.FindingMTU}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip link set %s mtu %d", dev, e.mtu)})
	}
	if len(nd.IPv4) == 0 {
		p.add(Change{Checks: []string{erdma.FindingNetdevIP}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip addr add %s dev %s noprefixroute", addr, dev)})
	}
	if nd.OperState != "up" && nd.OperState != "unknown" {
		p.add(Change{Checks: []string{erdma.FindingNetdevIP}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip link set %s up", dev)})
	}
}

// planLink compares the live netdev with e and plans the netlink changes
// (internal/netdev, the planner `erdmakit eri configure` uses too).
func planLink(p *Plan, e eri) error {
	steps, found, err := netdev.Plan(nil, e.config())
	if err != nil {
		return err
	}
	p.Found = append(p.Found, found...)
	for _, st := range steps {
		p.AddChange(Change{Checks: st.Checks, Kind: KindNetlink, Target: st.Target, Command: st.Command, Revert: st.Revert}, st.Apply)
	}
	return nil
}

// uuidOf is a stable UUID (version 5 layout) for a connection, so that a
// rerun writes the same keyfile.
func uuidOf(s string) string {
	h := sha256.Sum256([]byte("erdmakit:" + s))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

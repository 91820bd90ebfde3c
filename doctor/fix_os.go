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
	"github.com/vishvananda/netlink"
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

// DetectNetworkStack says how the host under files persists its network
// configuration, and the evidence. netplan first (it renders to NetworkManager
// or networkd, which must not be written behind its back), then ifcfg files
// (read by NetworkManager's ifcfg-rh plugin or network-scripts), then
// NetworkManager, then systemd-networkd.
func DetectNetworkStack(files *hostconf.Files) (stack, why string, err error) {
	has := func(dir, suffix string, skip ...string) string {
		root := files.Root
		if root == "" {
			root = "/"
		}
		ents, err := readDirNames(root, dir)
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
		if exists(files, f) {
			return StackNetworkManager, f + " exists (NetworkManager enabled)", nil
		}
	}
	if f := has("/etc/NetworkManager/system-connections", ""); f != "" {
		return StackNetworkManager, f + " exists", nil
	}
	for _, f := range []string{"/etc/systemd/system/multi-user.target.wants/systemd-networkd.service", "/etc/systemd/system/dbus-org.freedesktop.network1.service"} {
		if exists(files, f) {
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
	addr      *net.IPNet // the address with its prefix
	gateway   net.IP
	mtu       int
	metric    int
}

func (e eri) subnet() *net.IPNet {
	return &net.IPNet{IP: e.addr.IP.Mask(e.addr.Mask), Mask: e.addr.Mask}
}

// osFix: guide step 3 and the MTU guide. Every ERI netdev up with its
// address, its routes above the primary ENI's metric (the kernel's prefix
// route at metric 0 would compete with eth0's in the same vSwitch: the
// address is added with noprefixroute and the subnet route re-added at the
// ERI's metric, as Alibaba's erdma-controller does), the MTU the instance's
// jumbo-frame setting allows (erdma.ERIMTU), and all of it persisted in the
// host's own network configuration system.
func osFix() *Fix {
	return &Fix{Stage: StageOS, Title: "ERI netdevs up with address, routes and MTU, persisted", Plan: planOS}
}

func planOS(ctx context.Context, in *Input, env *FixEnv) (*Plan, error) {
	p := newPlan(StageOS)
	inv := in.Inventory
	names := env.Netdevs
	if len(names) == 0 {
		for _, d := range inv.Devices {
			if d.ERDMA && d.Netdev != "" && !slices.Contains(names, d.Netdev) {
				names = append(names, d.Netdev)
			}
		}
	}
	if len(names) == 0 {
		p.Found = append(p.Found, "no ERI netdev (no eRDMA device with a paired netdev)")
		if inv.Profile != nil {
			p.Blocked = "no ERI netdev to configure"
			p.Next = "attach the ERIs (erdmakit setup's cloud stage, or erdmakit eri attach) and load the erdma driver; then rerun erdmakit setup"
		}
		return p, nil
	}
	if len(names) > 64 {
		return nil, fmt.Errorf("%d netdevs: at most 64", len(names))
	}
	files := env.files(in)
	stack, why := env.NetworkStack, "asked for"
	if stack == "" {
		var err error
		if stack, why, err = DetectNetworkStack(files); err != nil && !env.Describe {
			// Nothing is applied: a configuration lost at the next boot is
			// what this stage exists to prevent.
			p.Blocked = err.Error()
			p.Next = "name how this host persists its network: --network-stack networkmanager, netplan, ifcfg or networkd"
		}
	}
	if stack != "" {
		p.Found = append(p.Found, "network configuration: "+stack+" ("+why+")")
	}
	want := erdma.ERIMTU(inv.Instance)
	switch want {
	case erdma.MTUJumbo:
		p.Found = append(p.Found, "instance has jumbo frames: MTU 8500")
	case erdma.MTUSmall:
		p.Found = append(p.Found, "instance has no jumbo frames: MTU 1400")
	default:
		p.Found = append(p.Found, "jumbo frames unknown (no EnableJumboFrame): an MTU of 8500 or 1400 is kept, anything else becomes 1400")
	}
	live := in.Host.Live() && !env.Describe
	primary := 0
	if live {
		primary = netdev.PrimaryMetric(names)
	}
	for i, name := range names {
		nd := netdevOf(inv, name)
		if nd == nil {
			return nil, fmt.Errorf("%s: no such netdev on this host", name)
		}
		e := eri{name: name, mac: strings.ToLower(nd.MAC), metric: primary + 100 + i, mtu: want}
		if e.mtu == 0 {
			e.mtu = erdma.MTUSmall
			if nd.MTU == erdma.MTUJumbo {
				e.mtu = erdma.MTUJumbo
			}
		}
		if err := addressOf(ctx, &e, nd, env, live); err != nil {
			if live {
				return nil, err
			}
			// A recorded host or advice: the plan names what it lacks.
			if !env.Describe {
				p.Found = append(p.Found, err.Error())
			}
		}
		if live {
			if err := planLink(p, e); err != nil {
				return nil, err
			}
		} else {
			planDescribed(p, e, nd)
		}
		if stack != "" && e.addr != nil {
			if err := planPersist(p, files, stack, e); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
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
func addressOf(ctx context.Context, e *eri, nd *erdma.Netdev, env *FixEnv, live bool) error {
	var mdErr error
	if !env.Describe {
		md := env.Metadata
		if md == nil {
			md = &erdma.MetadataClient{}
		}
		nc, err := md.NetConfig(ctx, e.mac)
		if err == nil {
			ip, n, _ := net.ParseCIDR(nc.Address)
			e.addr = &net.IPNet{IP: ip.To4(), Mask: n.Mask}
			e.gateway = net.ParseIP(nc.Gateway).To4()
			return nil
		}
		mdErr = err
	}
	for _, a := range nd.IPv4 {
		if ip, n, err := net.ParseCIDR(a); err == nil && ip.To4() != nil {
			e.addr = &net.IPNet{IP: ip.To4(), Mask: n.Mask}
			break
		}
	}
	if e.addr != nil && live {
		if l, err := netlink.LinkByName(e.name); err == nil {
			if rs, err := netlink.RouteList(l, netlink.FAMILY_V4); err == nil {
				for _, r := range rs {
					if r.Gw != nil && (r.Dst == nil || r.Dst.IP.IsUnspecified()) {
						e.gateway = r.Gw.To4()
					}
				}
			}
		}
	}
	if e.addr == nil || (live && e.gateway == nil) {
		if mdErr == nil {
			mdErr = errors.New("not asked")
		}
		return fmt.Errorf("%s (%s): no address to configure: the metadata service: %w", e.name, e.mac, mdErr)
	}
	return nil
}

// planDescribed plans from the inventory alone (advice, a recorded host).
func planDescribed(p *Plan, e eri, nd *erdma.Netdev) {
	addr := "<its address from the metadata service>"
	if e.addr != nil {
		addr = e.addr.String()
	}
	if nd.MTU != e.mtu {
		p.add(Change{Checks: []string{erdma.FindingMTU}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip link set %s mtu %d", e.name, e.mtu)})
	}
	if len(nd.IPv4) == 0 {
		p.add(Change{Checks: []string{erdma.FindingNetdevIP}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip addr add %s dev %s noprefixroute", addr, e.name)})
	}
	if nd.OperState != "up" && nd.OperState != "unknown" {
		p.add(Change{Checks: []string{erdma.FindingNetdevIP}, Kind: KindNetlink, Target: e.name, Command: fmt.Sprintf("ip link set %s up", e.name)})
	}
}

// planLink compares the live netdev with e and plans the netlink changes
// (internal/netdev, the planner `erdmakit eri configure` uses too).
func planLink(p *Plan, e eri) error {
	steps, found, err := netdev.Plan(netdev.Config{Name: e.name, Addr: e.addr, Gateway: e.gateway, MTU: e.mtu, Metric: e.metric})
	if err != nil {
		return err
	}
	p.Found = append(p.Found, found...)
	for _, st := range steps {
		p.AddChange(Change{Checks: st.Checks, Kind: KindNetlink, Target: st.Target, Command: st.Command, Revert: st.Revert}, st.Apply)
	}
	return nil
}

// planPersist plans the ERI's file in the host's network configuration
// system, in that system's own format.
func planPersist(p *Plan, files *hostconf.Files, stack string, e eri) error {
	checks := []string{erdma.FindingNetdevIP, erdma.FindingMTU}
	sub, ones := e.subnet(), 0
	ones, _ = e.addr.Mask.Size()
	gw := ""
	if e.gateway != nil {
		gw = e.gateway.String()
	}
	switch stack {
	case StackNetplan:
		var b strings.Builder
		fmt.Fprintf(&b, "# ERI %s (eRDMA): address, routes above the primary ENI's metric, MTU\nnetwork:\n  version: 2\n  ethernets:\n    %s:\n", e.name, e.name)
		fmt.Fprintf(&b, "      match:\n        macaddress: \"%s\"\n      mtu: %d\n      addresses: [\"%s\"]\n      routes:\n", e.mac, e.mtu, e.addr)
		fmt.Fprintf(&b, "        - to: \"%s\"\n          scope: link\n          from: \"%s\"\n          metric: %d\n", sub, e.addr.IP, e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "        - to: default\n          via: \"%s\"\n          metric: %d\n", gw, e.metric)
		}
		return p.AddFile(files, checks, "/etc/netplan/60-erdmakit-"+e.name+".yaml", b.String(), "", false, 0o600)
	case StackNetworkManager:
		var b strings.Builder
		id := "erdmakit-" + e.name
		fmt.Fprintf(&b, "[connection]\nid=%s\nuuid=%s\ntype=ethernet\ninterface-name=%s\nautoconnect=true\n\n", id, uuidOf(id+e.mac), e.name)
		fmt.Fprintf(&b, "[ethernet]\nmac-address=%s\nmtu=%d\n\n", strings.ToUpper(e.mac), e.mtu)
		fmt.Fprintf(&b, "[ipv4]\nmethod=manual\naddress1=%s\nroute-metric=%d\n", e.addr, e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "gateway=%s\n", gw)
		}
		b.WriteString("\n[ipv6]\nmethod=ignore\n")
		return p.AddFile(files, checks, "/etc/NetworkManager/system-connections/"+id+".nmconnection", b.String(), "", false, 0o600)
	case StackIfcfg:
		var b strings.Builder
		fmt.Fprintf(&b, "DEVICE=%s\nHWADDR=%s\nTYPE=Ethernet\nBOOTPROTO=none\nONBOOT=yes\nIPADDR=%s\nPREFIX=%d\nMTU=%d\nIPV4_ROUTE_METRIC=%d\nDEFROUTE=no\n",
			e.name, e.mac, e.addr.IP, ones, e.mtu, e.metric)
		if err := p.AddFile(files, checks, "/etc/sysconfig/network-scripts/ifcfg-"+e.name, b.String(), "eri", true, 0o644); err != nil {
			return err
		}
		route := ""
		if gw != "" {
			route = fmt.Sprintf("default via %s dev %s metric %d\n", gw, e.name, e.metric)
		}
		route += fmt.Sprintf("%s dev %s scope link src %s metric %d\n", sub, e.name, e.addr.IP, e.metric)
		return p.AddFile(files, checks, "/etc/sysconfig/network-scripts/route-"+e.name, route, "eri", true, 0o644)
	case StackNetworkd:
		var b strings.Builder
		fmt.Fprintf(&b, "[Match]\nMACAddress=%s\n\n[Link]\nMTUBytes=%d\n\n[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n\n", e.mac, e.mtu)
		fmt.Fprintf(&b, "[Address]\nAddress=%s\nAddPrefixRoute=no\n\n[Route]\nDestination=%s\nScope=link\nPreferredSource=%s\nMetric=%d\n", e.addr, sub, e.addr.IP, e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "\n[Route]\nGateway=%s\nMetric=%d\n", gw, e.metric)
		}
		return p.AddFile(files, checks, "/etc/systemd/network/60-erdmakit-"+e.name+".network", b.String(), "", false, 0o644)
	}
	return fmt.Errorf("%w: %q", ErrNoNetworkStack, stack)
}

// uuidOf is a stable UUID (version 5 layout) for a connection, so that a
// rerun writes the same keyfile.
func uuidOf(s string) string {
	h := sha256.Sum256([]byte("erdmakit:" + s))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Package netdev plans and makes one ERI netdev's live configuration through
// netlink: the MTU, the address with noprefixroute, link up, the subnet and
// default routes at the ERI's metric, and the kernel's metric-0 prefix route
// removed (it would compete with the primary ENI's route to the same
// vSwitch), as Alibaba's erdma-controller does. The doctor's os fix (setup's
// os stage) and `erdmakit eri configure` both plan through it, so the two
// cannot differ; it lives below both so that package eri does not import
// the doctor.
package netdev

import (
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Config is one ERI netdev's wanted live configuration.
type Config struct {
	Name    string
	Addr    *net.IPNet // the address with its prefix
	Gateway net.IP     // nil: no default route
	MTU     int
	Metric  int // of the subnet and default routes
}

// Parse is the Config of an IPv4 address in CIDR form ("10.0.1.5/24") and a
// gateway ("" for none).
func Parse(name, address, gateway string, mtu, metric int) (Config, error) {
	ip, n, err := net.ParseCIDR(address)
	if err != nil || ip.To4() == nil {
		return Config{}, fmt.Errorf("%s: address %q: want IPv4 CIDR", name, address)
	}
	c := Config{Name: name, Addr: &net.IPNet{IP: ip.To4(), Mask: n.Mask}, MTU: mtu, Metric: metric}
	if gateway != "" {
		if c.Gateway = net.ParseIP(gateway).To4(); c.Gateway == nil {
			return Config{}, fmt.Errorf("%s: gateway %q: want IPv4", name, gateway)
		}
	}
	return c, nil
}

// Subnet is the network of the address.
func (c Config) Subnet() *net.IPNet {
	return &net.IPNet{IP: c.Addr.IP.Mask(c.Addr.Mask), Mask: c.Addr.Mask}
}

// Step is one planned netlink change: the doctor checks it serves, the
// netdev, the command a person would type for it and the one that undoes
// it, and Apply, which makes it.
type Step struct {
	Checks  []string
	Target  string
	Command string
	Revert  string
	Apply   func(ctx context.Context) error
}

// Plan compares the live netdev c.Name with c: the changes to make, in
// order, and what is already as wanted (in words). It changes nothing.
func Plan(c Config) (steps []Step, found []string, err error) {
	if c.Addr == nil {
		return nil, nil, fmt.Errorf("%s: no address to configure", c.Name)
	}
	l, err := netlink.LinkByName(c.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	a := l.Attrs()
	both := []string{erdma.FindingNetdevIP}
	if a.MTU != c.MTU {
		steps = append(steps, Step{Checks: []string{erdma.FindingMTU}, Target: c.Name,
			Command: fmt.Sprintf("ip link set %s mtu %d", c.Name, c.MTU), Revert: fmt.Sprintf("ip link set %s mtu %d", c.Name, a.MTU),
			Apply: func(context.Context) error { return netlink.LinkSetMTU(l, c.MTU) }})
	} else {
		found = append(found, fmt.Sprintf("%s: MTU %d", c.Name, a.MTU))
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: addresses: %w", c.Name, err)
	}
	if !slices.ContainsFunc(addrs, func(ad netlink.Addr) bool { return ad.IPNet.String() == c.Addr.String() }) {
		addr := &netlink.Addr{IPNet: c.Addr, Flags: unix.IFA_F_NOPREFIXROUTE}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip addr add %s dev %s noprefixroute", c.Addr, c.Name), Revert: fmt.Sprintf("ip addr del %s dev %s", c.Addr, c.Name),
			Apply: func(context.Context) error { return netlink.AddrAdd(l, addr) }})
	} else {
		found = append(found, fmt.Sprintf("%s: address %s", c.Name, c.Addr))
	}
	if a.Flags&net.FlagUp == 0 {
		steps = append(steps, Step{Checks: both, Target: c.Name, Command: fmt.Sprintf("ip link set %s up", c.Name),
			Revert: fmt.Sprintf("ip link set %s down", c.Name),
			Apply:  func(context.Context) error { return netlink.LinkSetUp(l) }})
	} else {
		found = append(found, c.Name+": up")
	}
	routes, err := netlink.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: routes: %w", c.Name, err)
	}
	sub := c.Subnet()
	isSub := func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == sub.String() && r.Gw == nil }
	if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return isSub(r) && r.Priority == c.Metric }) {
		rt := &netlink.Route{LinkIndex: a.Index, Dst: sub, Src: c.Addr.IP, Scope: netlink.SCOPE_LINK, Priority: c.Metric, Protocol: unix.RTPROT_KERNEL}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip route add %s dev %s proto kernel scope link src %s metric %d", sub, c.Name, c.Addr.IP, c.Metric),
			Revert:  fmt.Sprintf("ip route del %s dev %s metric %d", sub, c.Name, c.Metric),
			Apply:   func(context.Context) error { return netlink.RouteReplace(rt) }})
	}
	for _, r := range routes {
		if isSub(r) && r.Priority == 0 {
			// The kernel's prefix route: at metric 0 it competes with the
			// primary ENI's route to the same vSwitch.
			rt := r
			steps = append(steps, Step{Checks: both, Target: c.Name,
				Command: fmt.Sprintf("ip route del %s dev %s metric 0", sub, c.Name),
				Revert:  fmt.Sprintf("ip route add %s dev %s scope link src %s", sub, c.Name, c.Addr.IP),
				Apply:   func(context.Context) error { return netlink.RouteDel(&rt) }})
		}
	}
	if c.Gateway != nil && !slices.ContainsFunc(routes, func(r netlink.Route) bool {
		return r.Gw != nil && r.Gw.Equal(c.Gateway) && (r.Dst == nil || r.Dst.IP.IsUnspecified())
	}) {
		rt := &netlink.Route{LinkIndex: a.Index, Gw: c.Gateway, Priority: c.Metric,
			Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip route add default via %s dev %s metric %d", c.Gateway, c.Name, c.Metric),
			Revert:  fmt.Sprintf("ip route del default via %s dev %s metric %d", c.Gateway, c.Name, c.Metric),
			Apply:   func(context.Context) error { return netlink.RouteReplace(rt) }})
	}
	return steps, found, nil
}

// PrimaryMetric is the lowest metric of the default routes that do not go
// through one of the netdevs named (the ERIs): the primary ENI's, 0 when
// there is none. The ERIs' routes go above it.
func PrimaryMetric(names []string) int {
	eris := map[int]bool{}
	for _, n := range names {
		if l, err := netlink.LinkByName(n); err == nil {
			eris[l.Attrs().Index] = true
		}
	}
	rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return 0
	}
	best := -1
	for _, r := range rs {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && !eris[r.LinkIndex] && (best < 0 || r.Priority < best) {
			best = r.Priority
		}
	}
	return max(best, 0)
}

// Apply makes steps in order and stops at the first that fails (the error
// names its command; a rerun plans again from what is there).
func Apply(ctx context.Context, steps []Step) error {
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Apply(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.Command, err)
		}
	}
	return nil
}

// Commands are the steps as a person would type them, in order.
func Commands(steps []Step) []string {
	out := make([]string, 0, len(steps))
	for _, st := range steps {
		out = append(out, st.Command)
	}
	return out
}

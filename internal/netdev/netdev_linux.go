//go:build linux

package netdev

import (
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/shq"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// handle is h, or the handle of this process's network namespace when h is
// nil (what netlink's package-level functions use).
func handle(h *netlink.Handle) *netlink.Handle {
	if h == nil {
		return &netlink.Handle{}
	}
	return h
}

// Plan compares the live netdev c.Name, as h sees it, with c: the changes
// to make, in order, and what is already as wanted (in words); the steps
// change the netdev through h. It changes nothing itself. h nil is this
// process's network namespace; netlink.NewHandleAt gives another's.
func Plan(h *netlink.Handle, c Config) (steps []Step, found []string, err error) {
	if c.Addr == nil {
		return nil, nil, fmt.Errorf("%s: no address to configure", c.Name)
	}
	if err := c.Check(); err != nil {
		return nil, nil, err
	}
	h = handle(h)
	dev := shq.Quote(c.Name)
	l, err := h.LinkByName(c.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dev, err)
	}
	a := l.Attrs()
	both := []string{erdma.FindingNetdevIP}
	if a.MTU != c.MTU {
		steps = append(steps, Step{Checks: []string{erdma.FindingMTU}, Target: c.Name,
			Command: fmt.Sprintf("ip link set %s mtu %d", dev, c.MTU), Revert: fmt.Sprintf("ip link set %s mtu %d", dev, a.MTU),
			Apply: func(context.Context) error { return h.LinkSetMTU(l, c.MTU) }})
	} else {
		found = append(found, fmt.Sprintf("%s: MTU %d", dev, a.MTU))
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: addresses: %w", dev, err)
	}
	local := c.Local()
	if !slices.ContainsFunc(addrs, func(ad netlink.Addr) bool { return ad.IPNet.String() == local.String() }) {
		addr := &netlink.Addr{IPNet: local, Flags: unix.IFA_F_NOPREFIXROUTE}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip addr add %s dev %s noprefixroute", local, dev), Revert: fmt.Sprintf("ip addr del %s dev %s", local, dev),
			Apply: func(context.Context) error { return h.AddrAdd(l, addr) }})
	} else {
		found = append(found, fmt.Sprintf("%s: address %s", dev, local))
	}
	dropped := false // an address whose prefix route goes with it
	for _, ad := range addrs {
		if ad.IP.Equal(c.Addr.IP) && ad.IPNet.String() != local.String() {
			dropped = dropped || ad.IPNet.String() == c.Addr.String()
			// The same address with another prefix (an earlier
			// configuration): its prefix route would come back with it.
			old := ad
			steps = append(steps, Step{Checks: both, Target: c.Name,
				Command: fmt.Sprintf("ip addr del %s dev %s", old.IPNet, dev), Revert: fmt.Sprintf("ip addr add %s dev %s", old.IPNet, dev),
				Apply: func(context.Context) error { return h.AddrDel(l, &old) }})
		}
	}
	if a.Flags&net.FlagUp == 0 {
		steps = append(steps, Step{Checks: both, Target: c.Name, Command: fmt.Sprintf("ip link set %s up", dev),
			Revert: fmt.Sprintf("ip link set %s down", dev),
			Apply:  func(context.Context) error { return h.LinkSetUp(l) }})
	} else {
		found = append(found, c.Name+": up")
	}
	routes, err := h.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: routes: %w", dev, err)
	}
	sub := c.Subnet()
	isSub := func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == sub.String() && r.Gw == nil }
	if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return isSub(r) && r.Priority == c.Metric }) {
		rt := &netlink.Route{LinkIndex: a.Index, Dst: sub, Src: c.Addr.IP, Scope: netlink.SCOPE_LINK, Priority: c.Metric, Protocol: unix.RTPROT_KERNEL}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip route add %s dev %s proto kernel scope link src %s metric %d", sub, dev, c.Addr.IP, c.Metric),
			Revert:  fmt.Sprintf("ip route del %s dev %s metric %d", sub, dev, c.Metric),
			Apply:   func(context.Context) error { return h.RouteReplace(rt) }})
	}
	for _, r := range routes {
		if isSub(r) && r.Priority == 0 && !dropped {
			// The kernel's prefix route: at metric 0 it competes with the
			// primary ENI's route to the same vSwitch.
			rt := r
			steps = append(steps, Step{Checks: both, Target: c.Name,
				Command: fmt.Sprintf("ip route del %s dev %s metric 0", sub, dev),
				Revert:  fmt.Sprintf("ip route add %s dev %s scope link src %s", sub, dev, c.Addr.IP),
				Apply:   func(context.Context) error { return h.RouteDel(&rt) }})
		}
	}
	if c.Gateway != nil && !slices.ContainsFunc(routes, func(r netlink.Route) bool {
		return r.Gw != nil && r.Gw.Equal(c.Gateway) && (r.Dst == nil || r.Dst.IP.IsUnspecified())
	}) {
		rt := &netlink.Route{LinkIndex: a.Index, Gw: c.Gateway, Priority: c.Metric,
			Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}}
		steps = append(steps, Step{Checks: both, Target: c.Name,
			Command: fmt.Sprintf("ip route add default via %s dev %s metric %d", c.Gateway, dev, c.Metric),
			Revert:  fmt.Sprintf("ip route del default via %s dev %s metric %d", c.Gateway, dev, c.Metric),
			Apply:   func(context.Context) error { return h.RouteReplace(rt) }})
	}
	return steps, found, nil
}

// ERIMetric is the metric of the first ERI's routes (one more per further
// ERI): 100 above the highest metric of the default routes that do not go
// through one of the netdevs named (the primary ENI's), and at least
// MinMetric. h is the namespace's netlink handle (nil: this process's).
func ERIMetric(h *netlink.Handle, names []string) int {
	h = handle(h)
	eris := map[int]bool{}
	for _, n := range names {
		if l, err := h.LinkByName(n); err == nil {
			eris[l.Attrs().Index] = true
		}
	}
	rs, err := h.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return MinMetric
	}
	m := MinMetric
	for _, r := range rs {
		if (r.Dst == nil || r.Dst.IP.IsUnspecified()) && !eris[r.LinkIndex] {
			m = max(m, r.Priority+100)
		}
	}
	return m
}

// Gateway is the gateway of the live default route through netdev name that
// lies inside subnet, or nil: what a configured ERI's file persists. h is
// the namespace's netlink handle (nil: this process's).
func Gateway(h *netlink.Handle, name string, subnet *net.IPNet) net.IP {
	h = handle(h)
	l, err := h.LinkByName(name)
	if err != nil {
		return nil
	}
	rs, err := h.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil
	}
	var gw net.IP
	for _, r := range rs {
		if r.Gw != nil && (r.Dst == nil || r.Dst.IP.IsUnspecified()) && subnet.Contains(r.Gw) {
			gw = r.Gw.To4()
		}
	}
	return gw
}

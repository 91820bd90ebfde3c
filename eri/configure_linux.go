//go:build linux

package eri

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/erdmakit/erdmakit/internal/netdev"
	"github.com/vishvananda/netlink"
)

// Configure brings each ERI netdev (found by MAC) up with the address and
// gateway the metadata service gives, its subnet and default routes at a
// metric above the primary's (primary+100, +1 per further ERI; the address
// added with noprefixroute, so that no route at metric 0 competes with the
// primary's in the same vSwitch), and the MTU: the planner of setup's os
// stage (the doctor's os fix), without persisting (erdmakit setup does). A
// netdev already up with an IPv4 is left alone and reported. Netlink in the caller's network namespace.
func Configure(ctx context.Context, macs []string, opt ConfigureOptions) ([]LinkResult, error) {
	mtu := opt.MTU
	if mtu == 0 {
		mtu = MTUJumbo
	}
	if mtu != MTUJumbo && mtu != MTUSmall {
		return nil, fmt.Errorf("MTU %d: the guide allows %d (jumbo frames) or %d: %w", mtu, MTUJumbo, MTUSmall, ErrConfigure)
	}
	if len(macs) > 64 {
		return nil, fmt.Errorf("%d MACs: at most 64: %w", len(macs), ErrConfigure)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w: %w", ErrConfigure, err)
	}
	byMAC := map[string]netlink.Link{}
	for _, l := range links {
		byMAC[strings.ToLower(l.Attrs().HardwareAddr.String())] = l
	}
	var eris []string
	for _, m := range macs {
		if l := byMAC[strings.ToLower(m)]; l != nil {
			eris = append(eris, l.Attrs().Name)
		}
	}
	metric := netdev.ERIMetric(nil, eris)
	var out []LinkResult
	var firstErr error
	for i, mac := range macs {
		mac = strings.ToLower(mac)
		r := LinkResult{MAC: mac}
		// One default route per ERI: equal metrics would collide (EEXIST).
		err := configureOne(ctx, &r, byMAC[mac], mtu, metric+i, opt)
		if err != nil {
			r.Error = err.Error()
			if firstErr == nil {
				firstErr = err
			}
		}
		out = append(out, r)
	}
	return out, firstErr
}

func configureOne(ctx context.Context, r *LinkResult, l netlink.Link, mtu, metric int, opt ConfigureOptions) error {
	if l == nil {
		return fmt.Errorf("no netdev with MAC %s (is the eRDMA/virtio driver loaded?): %w", r.MAC, ErrConfigure)
	}
	a := l.Attrs()
	r.Netdev = a.Name
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("%s: addresses: %w: %w", a.Name, ErrConfigure, err)
	}
	if a.Flags&net.FlagUp != 0 && len(addrs) > 0 {
		var have []string
		for _, ad := range addrs {
			have = append(have, ad.IPNet.String())
		}
		r.LeftAlone = fmt.Sprintf("already up with %s (MTU %d): not touched", strings.Join(have, ", "), a.MTU)
		return nil
	}
	nc, err := NetConfigFor(ctx, opt.Metadata, r.MAC)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", a.Name, ErrConfigure, err)
	}
	r.Config = &nc
	// The os stage's planner: the address without the kernel's prefix
	// route at metric 0, the subnet and default routes at metric, the MTU.
	c, err := netdev.Parse(a.Name, nc.Address, nc.Gateway, mtu, metric)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfigure, err)
	}
	steps, _, err := netdev.Plan(nil, c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfigure, err)
	}
	r.Actions = netdev.Commands(steps)
	if opt.DryRun {
		return nil
	}
	if err := netdev.Apply(ctx, steps); err != nil {
		return fmt.Errorf("%w: %w", ErrConfigure, err)
	}
	return nil
}

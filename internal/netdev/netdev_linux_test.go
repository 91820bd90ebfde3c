package netdev_test

import (
	"context"
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netdev"
)

// namespace makes a fresh network namespace and returns the netlink handle
// into it; this process and its threads stay where they are (only the
// locked thread enters the namespace to make it, and comes back).
func namespace(t *testing.T) *netlink.Handle {
	t.Helper()
	labtest.RequireNamespaces(t)
	runtime.LockOSThread()
	orig, err := netns.Get()
	require.NoError(t, err)
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		runtime.UnlockOSThread()
		require.NoError(t, err, "new network namespace")
	}
	// The thread stays locked (and ends with the test's goroutine) if it
	// cannot come back: it must run nothing else in the new namespace.
	require.NoError(t, netns.Set(orig), "back to this process's namespace")
	runtime.UnlockOSThread()
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	t.Cleanup(h.Close)
	links, err := h.LinkList()
	require.NoError(t, err)
	require.Len(t, links, 1, "a fresh namespace has lo alone")
	return h
}

// veth adds the veth name (its peer up) in h's namespace with the address
// addr ("" for none) and brings it up when up.
func veth(t *testing.T, h *netlink.Handle, name, addr string, up bool) netlink.Link {
	t.Helper()
	require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: 1500}, PeerName: name + "p"}))
	peer, err := h.LinkByName(name + "p")
	require.NoError(t, err)
	require.NoError(t, h.LinkSetUp(peer))
	l, err := h.LinkByName(name)
	require.NoError(t, err)
	if addr != "" {
		a, err := netlink.ParseAddr(addr)
		require.NoError(t, err)
		require.NoError(t, h.AddrAdd(l, a))
	}
	if up {
		require.NoError(t, h.LinkSetUp(l))
	}
	return l
}

// TestPlanInNamespace plans an ERI's configuration against the links of a
// network namespace through its handle, from this test process (no child
// re-executed inside the namespace), applies it there and plans again:
// nothing left, and this process's own namespace untouched.
func TestPlanInNamespace(t *testing.T) {
	cfg, err := netdev.Parse("eri0", "10.0.1.11/24", "10.0.1.253", 8500, 1200)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		addr  string // the address eri0 has before, "" for none
		up    bool
		want  []string
		found []string
	}{
		{
			name: "bare netdev",
			want: []string{
				"ip link set eri0 mtu 8500",
				"ip addr add 10.0.1.11/24 dev eri0 noprefixroute",
				"ip link set eri0 up",
				"ip route add 10.0.1.0/24 dev eri0 proto kernel scope link src 10.0.1.11 metric 1200",
				"ip route add default via 10.0.1.253 dev eri0 metric 1200",
			},
		},
		{
			name: "address with the kernel's prefix route",
			addr: "10.0.1.11/24", up: true,
			want: []string{
				"ip link set eri0 mtu 8500",
				"ip route add 10.0.1.0/24 dev eri0 proto kernel scope link src 10.0.1.11 metric 1200",
				"ip route del 10.0.1.0/24 dev eri0 metric 0",
				"ip route add default via 10.0.1.253 dev eri0 metric 1200",
			},
			found: []string{"eri0: address 10.0.1.11/24", "eri0: up"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := namespace(t)
			veth(t, h, "eri0", tc.addr, tc.up)
			steps, found, err := netdev.Plan(h, cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, netdev.Commands(steps))
			assert.Equal(t, tc.found, found)
			if _, err := netlink.LinkByName("eri0p"); err == nil {
				t.Errorf("eri0p is in this process's own namespace: the test made it in the wrong one")
			}
			require.NoError(t, netdev.Apply(context.Background(), steps))
			steps, found, err = netdev.Plan(h, cfg)
			require.NoError(t, err)
			assert.Empty(t, netdev.Commands(steps), "applied: nothing left to plan")
			assert.Equal(t, []string{"eri0: MTU 8500", "eri0: address 10.0.1.11/24", "eri0: up"}, found)
			l, err := h.LinkByName("eri0")
			require.NoError(t, err)
			assert.Equal(t, "10.0.1.253", netdev.Gateway(h, "eri0", cfg.Subnet()).String())
			routes, err := h.RouteList(l, netlink.FAMILY_V4)
			require.NoError(t, err)
			var metrics []int
			for _, r := range routes {
				metrics = append(metrics, r.Priority)
			}
			assert.Equal(t, []int{1200, 1200}, metrics, "the ERI's subnet and default routes, no metric-0 prefix route")
		})
	}
	_, _, err = netdev.Plan(namespace(t), cfg)
	require.Error(t, err, "no eri0 in a fresh namespace")
	assert.Contains(t, err.Error(), "eri0")
}

// TestERIMetricAbovePrimary: in a fresh network namespace, the ERI metric
// is 200 when the primary has no default route yet (a DHCP primary comes up
// at 100 later), and 100 above the primary's default route otherwise, never
// from the ERI's own routes.
func TestERIMetricAbovePrimary(t *testing.T) {
	h := namespace(t)
	eth0, eri0 := veth(t, h, "eth0", "10.0.1.10/24", true), veth(t, h, "eri0", "10.0.1.11/24", true)
	assert.Equal(t, netdev.MinMetric, netdev.ERIMetric(h, []string{"eri0"}), "no default route yet: the floor")
	require.NoError(t, h.RouteAdd(&netlink.Route{LinkIndex: eri0.Attrs().Index, Gw: net.ParseIP("10.0.1.253"), Priority: 5000}))
	assert.Equal(t, netdev.MinMetric, netdev.ERIMetric(h, []string{"eri0"}), "the ERI's own default route does not count")
	require.NoError(t, h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.ParseIP("10.0.1.253"), Priority: 100}))
	assert.Equal(t, 200, netdev.ERIMetric(h, []string{"eri0"}), "a DHCP primary at 100")
	require.NoError(t, h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.ParseIP("10.0.1.254"), Priority: 1024}))
	assert.Equal(t, 1124, netdev.ERIMetric(h, []string{"eri0"}), "above every default route of the primary")
}

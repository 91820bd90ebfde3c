package netdev_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netdev"
)

const metricChildEnv = "ERDMAKIT_NETDEV_METRIC_CHILD"

// TestERIMetricAbovePrimary: in a fresh network namespace, the ERI metric
// is 200 when the primary has no default route yet (a DHCP primary comes up
// at 100 later), and 100 above the primary's default route otherwise, never
// from the ERI's own routes.
func TestERIMetricAbovePrimary(t *testing.T) {
	if os.Getenv(metricChildEnv) != "" {
		metricChild(t)
		return
	}
	labtest.RequireNamespaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, "unshare", "--net", os.Args[0], "-test.run=^TestERIMetricAbovePrimary$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), metricChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestERIMetricAbovePrimary", "child:\n%s", out)
}

func metricChild(t *testing.T) {
	links, err := netlink.LinkList()
	require.NoError(t, err)
	require.Len(t, links, 1, "refusing: this is not a fresh network namespace")
	link := func(name string) netlink.Link {
		require.NoError(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}))
		peer, err := netlink.LinkByName(name + "p")
		require.NoError(t, err)
		require.NoError(t, netlink.LinkSetUp(peer))
		l, err := netlink.LinkByName(name)
		require.NoError(t, err)
		a, _ := netlink.ParseAddr("10.0.1.10/24")
		if name == "eri0" {
			a, _ = netlink.ParseAddr("10.0.1.11/24")
		}
		require.NoError(t, netlink.AddrAdd(l, a))
		require.NoError(t, netlink.LinkSetUp(l))
		return l
	}
	eth0, eri0 := link("eth0"), link("eri0")
	assert.Equal(t, netdev.MinMetric, netdev.ERIMetric([]string{"eri0"}), "no default route yet: the floor")
	require.NoError(t, netlink.RouteAdd(&netlink.Route{LinkIndex: eri0.Attrs().Index, Gw: net.ParseIP("10.0.1.253"), Priority: 5000}))
	assert.Equal(t, netdev.MinMetric, netdev.ERIMetric([]string{"eri0"}), "the ERI's own default route does not count")
	require.NoError(t, netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.ParseIP("10.0.1.253"), Priority: 100}))
	assert.Equal(t, 200, netdev.ERIMetric([]string{"eri0"}), "a DHCP primary at 100")
	require.NoError(t, netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.ParseIP("10.0.1.254"), Priority: 1024}))
	assert.Equal(t, 1124, netdev.ERIMetric([]string{"eri0"}), "above every default route of the primary")
}

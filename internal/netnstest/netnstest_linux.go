//go:build linux

package netnstest

import (
	"context"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/execx"
)

// MetadataAddr is where the ECS metadata service listens on every instance
// (and ServeMetadata in the namespace).
const MetadataAddr = "100.100.100.200"

// Rerun runs the test named test again in this test binary, in the fresh
// namespaces unshare's flags ask for ("--net", "--mount"), with env=value in
// its environment telling the child what to do (and that it is the child);
// the child must pass, and so must each of its subtests named in subtests.
// It returns the child's output (logged too).
func Rerun(t *testing.T, test, env, value string, timeout time.Duration, unshare []string, subtests ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	args := append(append([]string{}, unshare...), os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd := execx.Command(ctx, "unshare", args...)
	cmd.Env = append(os.Environ(), env+"="+value)
	b, err := cmd.CombinedOutput()
	out := string(b)
	require.NoError(t, err, "child:\n%s", out)
	assert.Contains(t, out, "--- PASS: "+test, "child:\n%s", out)
	for _, s := range subtests {
		assert.Contains(t, out, "--- PASS: "+test+"/"+s, "child:\n%s", out)
	}
	t.Logf("child:\n%s", out)
	return out
}

// Fresh checks that this is a fresh network namespace (lo alone: the
// child refuses to change any other) and brings lo up; it returns lo.
func Fresh(t *testing.T) netlink.Link {
	t.Helper()
	links, err := netlink.LinkList()
	require.NoError(t, err)
	require.Len(t, links, 1, "refusing: this is not a fresh network namespace")
	require.NoError(t, netlink.LinkSetUp(links[0]))
	return links[0]
}

// ServeMetadata serves md at MetadataAddr:80, the address on lo, until
// the test ends: erdma.MetadataClient's default URL and the SDK's ECS RAM
// role provider reach it as on an instance.
func ServeMetadata(t *testing.T, lo netlink.Link, md *ecsfake.Metadata) {
	t.Helper()
	a, err := netlink.ParseAddr(MetadataAddr + "/32")
	require.NoError(t, err)
	require.NoError(t, netlink.AddrAdd(lo, a))
	ln, err := net.Listen("tcp", MetadataAddr+":80")
	require.NoError(t, err)
	srv := &http.Server{Handler: md, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// Veth adds the netdev name as one end of a veth pair whose other end
// (name+"peer") is up, with the MAC mac ("" for the kernel's choice); name
// itself stays down and without an address, as an unconfigured ERI.
func Veth(t *testing.T, name, mac string) netlink.Link {
	t.Helper()
	attrs := netlink.LinkAttrs{Name: name}
	if mac != "" {
		hw, err := net.ParseMAC(mac)
		require.NoError(t, err)
		attrs.HardwareAddr = hw
	}
	require.NoError(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: name + "peer"}))
	peer, err := netlink.LinkByName(name + "peer")
	require.NoError(t, err)
	require.NoError(t, netlink.LinkSetUp(peer))
	l, err := netlink.LinkByName(name)
	require.NoError(t, err)
	return l
}

// Primary adds the primary ENI eth0 (a veth, up) with the address addr
// ("10.0.1.10/24") and a default route through gw at metric. At metric 0
// the address brings the kernel's prefix route (a static primary); above
// it, the address has noprefixroute and the subnet route is at metric too,
// as a DHCP client configures it.
func Primary(t *testing.T, addr, gw string, metric int) netlink.Link {
	t.Helper()
	l := Veth(t, "eth0", "")
	a, err := netlink.ParseAddr(addr)
	require.NoError(t, err)
	if metric > 0 {
		a.Flags = unix.IFA_F_NOPREFIXROUTE
	}
	require.NoError(t, netlink.AddrAdd(l, a))
	require.NoError(t, netlink.LinkSetUp(l))
	idx := l.Attrs().Index
	if metric > 0 {
		sub := &net.IPNet{IP: a.IP.Mask(a.Mask), Mask: a.Mask}
		require.NoError(t, netlink.RouteAdd(&netlink.Route{LinkIndex: idx, Dst: sub, Src: a.IP, Scope: netlink.SCOPE_LINK, Priority: metric}))
	}
	require.NoError(t, netlink.RouteAdd(&netlink.Route{LinkIndex: idx, Gw: net.ParseIP(gw), Priority: metric}))
	return l
}

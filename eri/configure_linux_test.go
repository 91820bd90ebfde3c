package eri_test

import (
	"context"
	"net"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netnstest"
)

// TestConfigureErrorsInANamespace: Configure's per-netdev error paths, in
// this test's own network namespace (the goroutine's thread is moved into
// a new one and never leaves it: the thread ends with the test), dry runs
// only, so nothing is run: a netdev the metadata service does not know,
// one whose metadata is malformed, and, beside them, one already up with
// an address (left alone) and one it would configure. The metadata fake
// listens in the test's original namespace (its client dials from other
// threads).
func TestConfigureErrorsInANamespace(t *testing.T) {
	labtest.RequireNamespaces(t)
	const (
		macUnknown = "02:16:3e:ee:00:01"
		macBad     = "02:16:3e:ee:00:02"
		macUp      = "02:16:3e:ee:00:03"
		macGood    = "02:16:3e:ee:00:04"
	)
	md := &ecsfake.Metadata{InstanceID: testInst, InstanceType: testType, Region: testRegion, NICs: map[string]ecsfake.NIC{
		macBad:  {IP: "10.0.9.11", CIDR: "10.0.8.0/24", Gateway: "10.0.8.1"}, // the address is outside its vSwitch
		macGood: {IP: "10.0.7.11", CIDR: "10.0.7.0/24", Gateway: "10.0.7.253"},
	}}
	srv := httptest.NewServer(md)
	defer srv.Close()

	runtime.LockOSThread() // never unlocked: the thread leaves with the namespace
	require.NoError(t, unix.Unshare(unix.CLONE_NEWNET))
	links, err := netlink.LinkList()
	require.NoError(t, err)
	require.Len(t, links, 1, "refusing: this is not a fresh network namespace")
	var up netlink.Link
	for i, mac := range []string{macUnknown, macBad, macUp, macGood} {
		if l := netnstest.Veth(t, "eri"+string(rune('0'+i)), mac); mac == macUp {
			up = l
		}
	}
	a, _ := netlink.ParseAddr("10.0.3.50/24")
	require.NoError(t, netlink.AddrAdd(up, a))
	require.NoError(t, netlink.LinkSetUp(up))

	res, err := eri.Configure(context.Background(), []string{macUnknown, macBad, macUp, macGood},
		eri.ConfigureOptions{DryRun: true, Metadata: &erdma.MetadataClient{BaseURL: srv.URL}})
	require.ErrorIs(t, err, eri.ErrConfigure)
	assert.Contains(t, err.Error(), "eri0", "the first failure names its netdev")
	require.Len(t, res, 4)

	assert.Equal(t, "eri0", res[0].Netdev)
	assert.Contains(t, res[0].Error, "metadata for "+macUnknown)
	assert.Empty(t, res[0].Actions)

	assert.Equal(t, "eri1", res[1].Netdev)
	assert.Contains(t, res[1].Error, `ip "10.0.9.11", vswitch-cidr-block "10.0.8.0/24"`)
	assert.Empty(t, res[1].Actions)

	assert.Contains(t, res[2].LeftAlone, "already up with 10.0.3.50/24")
	assert.Empty(t, res[2].Error)

	assert.Empty(t, res[3].Error)
	assert.Equal(t, "10.0.7.11/24", res[3].Config.Address)
	assert.Contains(t, res[3].Actions, "ip route add default via 10.0.7.253 dev eri3 metric 203",
		"no primary route here: metric 200 (the floor), one more per ERI")
	l, err := netlink.LinkByName("eri3")
	require.NoError(t, err)
	assert.Zero(t, l.Attrs().Flags&net.FlagUp, "a dry run changed nothing")

	got, err := eri.NetConfigFor(context.Background(), &erdma.MetadataClient{BaseURL: srv.URL}, macGood)
	require.NoError(t, err)
	assert.Equal(t, "10.0.7.253", got.Gateway)
}

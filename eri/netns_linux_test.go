package eri_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netnstest"
)

// nsChildEnv marks the re-executed child inside its private network namespace.
const nsChildEnv = "ERDMAKIT_ERI_NETNS_CHILD"

// TestNetnsRAMRoleAndConfigure re-executes itself in a private network
// namespace where the metadata fake listens on 100.100.100.200:80 (lo):
// the SDK gets its credentials through credentials-go's ECS RAM role path,
// and Configure addresses veth interfaces carrying the ERIs' MACs.
func TestNetnsRAMRoleAndConfigure(t *testing.T) {
	if os.Getenv(nsChildEnv) == "1" {
		netnsChild(t)
		return
	}
	labtest.RequireNamespaces(t)
	netnstest.Rerun(t, "TestNetnsRAMRoleAndConfigure", nsChildEnv, "1", 90*time.Second, []string{"--net"}, "ram_role", "configure")
}

func netnsChild(t *testing.T) {
	lo := netnstest.Fresh(t)
	md := &ecsfake.Metadata{InstanceID: testInst, InstanceType: testType, Region: testRegion,
		Role: "erdmakit-role", RoleAK: "STS.FakeRoleKey", RoleSecret: "role-secret", RoleToken: "role-sts-token",
		NICs: map[string]ecsfake.NIC{}}
	netnstest.ServeMetadata(t, lo, md)

	t.Run("ram_role", func(t *testing.T) {
		f := &ecsfake.Server{AccessKeyID: md.RoleAK, AccessKeySecret: md.RoleSecret, SecurityToken: md.RoleToken,
			Types: map[string]ecsfake.Type{testType: {ID: testType, EriQuantity: 2, Cards: []int{0, 1}}}}
		f.AddENI(ecsfake.ENI{ID: "eni-primary", MAC: "00:16:3e:00:00:01", Type: "Primary", Mode: "Standard",
			Status: "InUse", InstanceID: testInst, VSwitchID: "vsw", SecurityGroups: []string{"sg"}})
		srv := httptest.NewServer(f)
		defer srv.Close()
		for _, k := range []string{"ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
			"ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ECS_METADATA_DISABLED", "ALIBABA_CLOUD_ROLE_ARN",
			"ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "ALIBABA_CLOUD_PROFILE"} {
			t.Setenv(k, "")
		}
		t.Setenv("HOME", t.TempDir())
		ctx := context.Background()
		tg, err := eri.ResolveTarget(ctx, &erdma.MetadataClient{}, eri.Target{})
		require.NoError(t, err)
		assert.Equal(t, target, tg, "region, id and type from the metadata service at its fixed address")
		c, err := eri.New(eri.Config{Region: tg.Region, Endpoint: srv.URL}) // the default credential chain
		require.NoError(t, err)
		defer c.Close()
		prov, err := c.CheckCredentials(ctx)
		require.NoError(t, err)
		assert.Contains(t, prov, "ecs_ram_role")
		v, err := c.Describe(ctx, tg)
		require.NoError(t, err, "signed with the role's STS key and token")
		assert.Equal(t, 2, v.TypeInfo.EriQuantity)
		assert.Positive(t, md.Hits("/latest/meta-data/ram/security-credentials/erdmakit-role"))
	})

	t.Run("configure", func(t *testing.T) {
		// The primary: a veth with the default route, metric 0.
		netnstest.Primary(t, "10.0.0.2/24", "10.0.0.1", 0)
		macs := []string{"00:16:3e:aa:00:01", "00:16:3e:aa:00:02", "00:16:3e:aa:00:03"}
		for i, mac := range macs {
			netnstest.Veth(t, "eri"+string(rune('0'+i)), mac)
		}
		md.NICs[macs[0]] = ecsfake.NIC{IP: "10.0.1.11", CIDR: "10.0.1.0/24", Gateway: "10.0.1.253"}
		md.NICs[macs[1]] = ecsfake.NIC{IP: "10.0.2.11", CIDR: "10.0.2.0/24", Gateway: "10.0.2.253"}
		// The third is configured already by someone else: left alone.
		third, err := netlink.LinkByName("eri2")
		require.NoError(t, err)
		ta, _ := netlink.ParseAddr("10.0.3.50/24")
		require.NoError(t, netlink.AddrAdd(third, ta))
		require.NoError(t, netlink.LinkSetUp(third))

		ctx := context.Background()
		dry, err := eri.Configure(ctx, macs, eri.ConfigureOptions{DryRun: true})
		require.NoError(t, err)
		assert.Equal(t, []string{"ip link set eri0 mtu 8500", "ip addr add 10.0.1.11/24 dev eri0 noprefixroute", "ip link set eri0 up",
			"ip route add 10.0.1.0/24 dev eri0 proto kernel scope link src 10.0.1.11 metric 200",
			"ip route add default via 10.0.1.253 dev eri0 metric 200"}, dry[0].Actions)
		l0, _ := netlink.LinkByName("eri0")
		assert.Equal(t, 1500, l0.Attrs().MTU, "dry run changed nothing")

		res, err := eri.Configure(ctx, macs, eri.ConfigureOptions{})
		require.NoError(t, err)
		require.Len(t, res, 3)
		assert.Contains(t, res[2].LeftAlone, "already up with 10.0.3.50/24")
		for i, want := range []string{"10.0.1.11/24", "10.0.2.11/24"} {
			l, err := netlink.LinkByName(res[i].Netdev)
			require.NoError(t, err)
			assert.Equal(t, 8500, l.Attrs().MTU)
			assert.NotZero(t, l.Attrs().Flags&net.FlagUp)
			addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
			require.Len(t, addrs, 1)
			assert.Equal(t, want, addrs[0].IPNet.String())
			routes, _ := netlink.RouteList(l, netlink.FAMILY_V4)
			var def *netlink.Route
			for j := range routes {
				if routes[j].Gw != nil {
					def = &routes[j]
				}
			}
			require.NotNil(t, def, "default route on %s", l.Attrs().Name)
			assert.Equal(t, 200+i, def.Priority, "metric at least 200 (the erdma-controller floor), above the primary, one per ERI")
			for _, r := range routes {
				if r.Gw == nil {
					assert.Equal(t, 200+i, r.Priority, "the subnet route at the ERI's metric, none at 0: %s", r)
				}
			}
		}
		l2, _ := netlink.LinkByName("eri2")
		assert.Equal(t, 1500, l2.Attrs().MTU, "the configured interface was not touched")

		again, err := eri.Configure(ctx, macs, eri.ConfigureOptions{})
		require.NoError(t, err)
		for _, r := range again {
			assert.Empty(t, r.Actions, "idempotent: %s", r.Netdev)
			assert.NotEmpty(t, r.LeftAlone)
		}

		_, err = eri.Configure(ctx, []string{"00:16:3e:ff:ff:ff"}, eri.ConfigureOptions{})
		require.ErrorIs(t, err, eri.ErrConfigure)
		_, err = eri.Configure(ctx, macs, eri.ConfigureOptions{MTU: 9000})
		require.ErrorIs(t, err, eri.ErrConfigure)
	})
}

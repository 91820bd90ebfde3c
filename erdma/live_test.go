package erdma_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

// Environment of the re-executed child of TestLiveNamespace.
const (
	liveChildEnv = "ERDMAKIT_LIVE_FIXTURE" // absolute path of the fixture to mount
	liveOutEnv   = "ERDMAKIT_LIVE_OUT"     // where the child writes its inventory
)

// TestLiveNamespace runs the live reader for real (LiveHost: netlink,
// rdmamap, getrlimit, sysfs at /sys) inside a private mount and network
// namespace where a fixture is mounted over /sys and /dev and veth pairs
// carry the fixture's MACs, MTUs and IPv4s; the result must match the same
// fixture read as a recorded host.
func TestLiveNamespace(t *testing.T) {
	if fx := os.Getenv(liveChildEnv); fx != "" {
		liveChild(t, fx, os.Getenv(liveOutEnv))
		return
	}
	labtest.RequireNamespaces(t)
	for _, name := range []string{"ebmgn8is-healthy", "iwarp-mode", "port-down-no-ip"} {
		t.Run(name, func(t *testing.T) {
			fx, err := filepath.Abs(fixture.Host(t, name))
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "inventory.json")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := execx.Command(ctx, "unshare", "--mount", "--net", "--propagation", "private",
				os.Args[0], "-test.run=^TestLiveNamespace$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), liveChildEnv+"="+fx, liveOutEnv+"="+out)
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "child:\n%s", b)
			raw, err := os.ReadFile(out)
			require.NoError(t, err, "child wrote no inventory:\n%s", b)
			var live erdma.Inventory
			require.NoError(t, json.Unmarshal(raw, &live))
			rec := readFixture(t, name)
			compareLive(t, rec, &live)

			// The child also recorded the live host: its replay reads the same.
			h, closer, err := erdma.OpenHost(t.Context(), out+".tar.gz")
			require.NoError(t, err)
			defer closer.Close()
			replayed, err := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{SkipTools: true})
			require.NoError(t, err)
			assert.Empty(t, replayed.Errors)
			compareLive(t, rec, replayed)
			assert.Equal(t, live.Devices, replayed.Devices, "replay of the live recording")
		})
	}
}

func compareLive(t *testing.T, rec, live *erdma.Inventory) {
	t.Helper()
	require.Len(t, live.Devices, len(rec.Devices))
	for i, r := range rec.Devices {
		l := live.Devices[i]
		assert.Equal(t, r.Name, l.Name)
		assert.Equal(t, r.PCIAddress, l.PCIAddress)
		assert.Equal(t, r.NUMANode, l.NUMANode)
		assert.Equal(t, r.ERDMA, l.ERDMA)
		assert.Equal(t, r.Transport, l.Transport)
		assert.Equal(t, r.CompatMode, l.CompatMode)
		assert.Equal(t, r.NodeGUID, l.NodeGUID)
		assert.Equal(t, r.UVerbs, l.UVerbs)
		assert.Equal(t, r.UVerbsPresent, l.UVerbsPresent)
		assert.Equal(t, r.Netdev, l.Netdev, "pairing of %s", r.Name)
		assert.Equal(t, r.NetdevBy, l.NetdevBy, "pairing of %s", r.Name)
		require.Len(t, l.Ports, len(r.Ports))
		for j := range r.Ports {
			assert.Equal(t, r.Ports[j].State, l.Ports[j].State)
			assert.Equal(t, r.Ports[j].GIDs, l.Ports[j].GIDs)
			assert.Equal(t, r.Ports[j].RecommendedGIDIndex, l.Ports[j].RecommendedGIDIndex, "GID index of %s", r.Name)
			assert.Equal(t, r.Ports[j].Counters, l.Ports[j].Counters)
		}
	}
	for _, r := range rec.Netdevs {
		l := netdev(live, r.Name)
		assert.Equal(t, r.MAC, l.MAC, r.Name)
		assert.Equal(t, r.MTU, l.MTU, r.Name)
		assert.Equal(t, r.IPv4, l.IPv4, r.Name)
		if r.OperState == "up" {
			assert.Equal(t, "up", l.OperState, r.Name)
		}
		// rdmamap ran for real: with gid_attrs ndevs it names the device.
		for _, d := range rec.Devices {
			if d.Netdev == r.Name && d.NetdevBy == "gid_attrs" {
				assert.Equal(t, d.Name, l.RDMADevice, "rdmamap for %s", r.Name)
			}
		}
	}
	assert.Equal(t, module(rec, "erdma"), module(live, "erdma"))
	assert.Equal(t, module(rec, "nvidia_peermem"), module(live, "nvidia_peermem"))
	require.NotNil(t, live.Memlock, "getrlimit ran")
}

// liveChild runs inside `unshare --mount --net`: it mounts the fixture over
// /sys and /dev, creates the fixture's netdevs as veth pairs, reads the
// live host and writes the inventory to out.
func liveChild(t *testing.T, fx, out string) {
	must := func(err error, what string) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must(syscall.Mount("tmpfs", "/sys", "tmpfs", 0, "mode=0755"), "mount tmpfs on /sys")
	must(hostgen.CopyTree(filepath.Join(fx, "sys"), "/sys"), "copy sys")
	must(syscall.Mount("tmpfs", "/dev", "tmpfs", 0, "mode=0755"), "mount tmpfs on /dev")
	for _, n := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"urandom", 1, 9}} {
		must(syscall.Mknod("/dev/"+n.name, syscall.S_IFCHR|0o666, int(n.major<<8|n.minor)), "mknod "+n.name)
	}
	if _, err := os.Stat(filepath.Join(fx, "dev")); err == nil {
		must(hostgen.CopyTree(filepath.Join(fx, "dev"), "/dev"), "copy dev")
	}

	var nds []erdma.Netdev
	raw, err := os.ReadFile(filepath.Join(fx, erdma.RecordedNetdevsFile))
	must(err, "read netdevs.json")
	must(json.Unmarshal(raw, &nds), "parse netdevs.json")
	for _, n := range nds {
		mac, err := net.ParseMAC(n.MAC)
		must(err, "MAC of "+n.Name)
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.Name, HardwareAddr: mac, MTU: n.MTU},
			PeerName: n.Name + "-peer", PeerMTU: uint32(n.MTU)}
		must(netlink.LinkAdd(veth), "veth "+n.Name)
		link, err := netlink.LinkByName(n.Name)
		must(err, "link "+n.Name)
		for _, cidr := range n.IPv4 {
			a, err := netlink.ParseAddr(cidr)
			must(err, "address "+cidr)
			must(netlink.AddrAdd(link, a), "add "+cidr)
		}
		if n.OperState == "up" {
			peer, err := netlink.LinkByName(n.Name + "-peer")
			must(err, "peer of "+n.Name)
			must(netlink.LinkSetUp(peer), "up "+n.Name+"-peer")
			must(netlink.LinkSetUp(link), "up "+n.Name)
		}
	}
	// Carrier comes up asynchronously: wait until the up links say so.
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range nds {
		for n.OperState == "up" && time.Now().Before(deadline) {
			l, err := netlink.LinkByName(n.Name)
			if err == nil && l.Attrs().OperState == netlink.OperUp {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	inv, err := erdma.ReadInventory(context.Background(), erdma.LiveHost(), erdma.InventoryOptions{SkipTools: true})
	must(err, "live inventory")
	b, err := json.Marshal(inv)
	must(err, "encode")
	must(os.WriteFile(out, b, 0o644), "write "+out)

	f, err := os.Create(out + ".tar.gz")
	must(err, "create recording")
	_, err = erdma.Record(context.Background(), erdma.LiveHost(), f, erdma.RecordOptions{Inventory: erdma.InventoryOptions{SkipTools: true}})
	must(err, "record the live host")
	must(f.Close(), "close recording")
}

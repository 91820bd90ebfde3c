package setup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netnstest"
)

const bootStackEnv = "ERDMAKIT_SETUP_BOOT_STACK"

// TestNetnsBootFromFiles is the reboot: in a fresh network namespace, eth0
// (the primary ENI, 10.0.1.10/24, on "DHCP" at metric 100) and an ERI eri0
// with no configuration, the files setup writes for eri0 are read by the
// real reader alone, as at boot: netplan generate, then systemd-networkd
// (run in the namespace, sysfs read-only so that it does not wait for
// udev) on what netplan generated; systemd-networkd on erdmakit's .network
// file with a catch-all 20-wired.network (Name=eri*, DHCP) beside it; for
// ifcfg, network-scripts' ifup-eth and ifup-routes steps (ip addr add
// IPADDR/PREFIX, then `ip -4 route add $line` per route-DEV line) from the
// file sourced in an empty environment; NetworkManager 1.42 (keyfile plugin
// only, a private system bus) on erdmakit's keyfile. Afterwards eri0 has the MTU and
// its routes at metric 200, and another host of the shared subnet is
// reached through eth0, not the ERI.
func TestNetnsBootFromFiles(t *testing.T) {
	if s := os.Getenv(bootStackEnv); s != "" {
		bootChild(t, s)
		return
	}
	labtest.RequireNamespaces(t)
	for _, stack := range []string{doctor.StackNetplan, doctor.StackNetworkd, doctor.StackIfcfg, doctor.StackNetworkManager} {
		t.Run(stack, func(t *testing.T) {
			runStackChild(t, "TestNetnsBootFromFiles", bootStackEnv, stack, time.Minute)
		})
	}
}

func tmpfsOver(t *testing.T, dir string) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"))
}

func bootChild(t *testing.T, stack string) {
	require.NoError(t, syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""))
	netnstest.Fresh(t)
	// The primary ENI on DHCP: address, subnet and default routes at 100.
	netnstest.Primary(t, "10.0.1.10/24", "10.0.1.253", 100)
	netnstest.Veth(t, "eri0", eriMAC)

	files, err := doctor.NetworkFiles(stack, "eri0", eriMAC, eriIP+"/24", "10.0.1.253", 8500, 200)
	require.NoError(t, err)
	for p, c := range files {
		t.Logf("--- %s\n%s", p, c)
	}
	switch stack {
	case doctor.StackNetplan, doctor.StackNetworkd:
		for _, d := range []string{"/etc/systemd/network", "/run/systemd/network", "/run/systemd/netif", "/run/dbus", "/etc/netplan"} {
			tmpfsOver(t, d)
		}
		require.NoError(t, syscall.Mount("sysfs", "/sys", "sysfs", syscall.MS_RDONLY, ""))
		for p, c := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
		}
		if stack == doctor.StackNetplan {
			out, err := exec.Command("netplan", "generate").CombinedOutput()
			require.NoError(t, err, "netplan generate: %s", out)
			// netplan matches the permanent MAC (ethtool's permaddr); a
			// veth has none, the ERI's virtio NIC has: the one word that
			// changes for the namespace.
			gen := "/run/systemd/network/10-netplan-eri0.network"
			b, err := os.ReadFile(gen)
			require.NoError(t, err)
			require.Contains(t, string(b), "PermanentMACAddress="+eriMAC+"\n")
			require.NoError(t, os.WriteFile(gen, []byte(strings.Replace(string(b), "PermanentMACAddress=", "MACAddress=", 1)), 0o644))
		} else {
			// A catch-all that would take eri0 (and give it DHCP, MTU
			// 1500, no static address) if it sorted first.
			require.NoError(t, os.WriteFile("/etc/systemd/network/20-wired.network", []byte("[Match]\nName=eri* eth*\n\n[Network]\nDHCP=yes\n"), 0o644))
		}
		_ = exec.Command("chown", "systemd-network:systemd-network", "/run/systemd/netif").Run()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		nd := execx.Command(ctx, "/lib/systemd/systemd-networkd")
		var log strings.Builder
		nd.Stdout, nd.Stderr = &log, &log
		require.NoError(t, nd.Start())
		defer func() {
			cancel()
			_ = nd.Wait()
			t.Logf("systemd-networkd:\n%s", log.String())
		}()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) && !eriReady(t) {
			time.Sleep(200 * time.Millisecond)
		}
	case doctor.StackNetworkManager:
		// NetworkManager with its keyfile plugin alone, on a private
		// system bus: nothing but erdmakit's keyfile to read.
		for _, d := range []string{"/run/dbus", "/run/NetworkManager", "/run/udev", "/etc/NetworkManager/system-connections", "/etc/NetworkManager/conf.d", "/var/lib/NetworkManager"} {
			tmpfsOver(t, d)
		}
		require.NoError(t, syscall.Mount("sysfs", "/sys", "sysfs", syscall.MS_RDONLY, ""))
		require.NoError(t, os.WriteFile("/etc/NetworkManager/conf.d/99-erdmakit-test.conf", []byte("[main]\nplugins=keyfile\nno-auto-default=*\n"), 0o644))
		for p, c := range files {
			require.NoError(t, os.WriteFile(p, []byte(c), 0o600))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		bus := execx.Command(ctx, "dbus-daemon", "--system", "--nofork", "--nopidfile")
		require.NoError(t, bus.Start())
		defer func() { cancel(); _ = bus.Wait() }()
		for i := 0; i < 50; i++ {
			if _, err := os.Stat("/run/dbus/system_bus_socket"); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		nm := execx.Command(ctx, "NetworkManager", "--no-daemon", "--debug", "--log-level=INFO") // --debug: log to stderr, not the host's syslog
		var log strings.Builder
		nm.Stdout, nm.Stderr = &log, &log
		require.NoError(t, nm.Start())
		defer func() {
			cancel()
			_ = nm.Wait()
			t.Logf("NetworkManager:\n%s", log.String())
		}()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && !eriReady(t) {
			time.Sleep(200 * time.Millisecond)
		}
	case doctor.StackIfcfg:
		dir := t.TempDir()
		for p, c := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(p)), []byte(c), 0o644))
		}
		// network-scripts: ifup-eth (MTU, link up, IPADDR/PREFIX), then
		// ifup-routes' handle_ip_file, word for word.
		script := `set -e
. ./ifcfg-eri0
ip link set dev "$DEVICE" mtu "$MTU"
ip link set dev "$DEVICE" up
ip addr add "$IPADDR/$PREFIX" brd + dev "$DEVICE"
MATCH='^[[:space:]]*(\#.*)?$'
{ cat route-eri0 ; echo ; } | while read line; do
    if [[ ! "$line" =~ $MATCH ]]; then
        /sbin/ip -4 route add $line
    fi
done`
		cmd := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", script)
		cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "network-scripts: %s", out)
	}
	require.True(t, eriReady(t), "eri0 configured from the files alone")
	l, err := netlink.LinkByName("eri0")
	require.NoError(t, err)
	assert.Equal(t, 8500, l.Attrs().MTU)
	routes, err := netlink.RouteList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	var got []string
	for _, r := range routes {
		got = append(got, fmt.Sprintf("%v via %v metric %d", r.Dst, r.Gw, r.Priority))
	}
	assert.ElementsMatch(t, []string{"10.0.1.0/24 via <nil> metric 200", "0.0.0.0/0 via 10.0.1.253 metric 200"}, got, "no kernel prefix route at metric 0")
	out, err := exec.Command("ip", "route", "get", "10.0.1.20").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "dev eth0", "another host of the shared subnet is reached through the primary: %s", out)
}

// eriReady: eri0 has its address and both routes.
func eriReady(t *testing.T) bool {
	l, err := netlink.LinkByName("eri0")
	if err != nil {
		return false
	}
	addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
	routes, _ := netlink.RouteList(l, netlink.FAMILY_V4)
	return len(addrs) > 0 && len(routes) >= 2
}

package setup_test

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/internal/netnstest"
	"github.com/erdmakit/erdmakit/setup"
)

// nsStackEnv names the network stack the re-executed child sets up.
const nsStackEnv = "ERDMAKIT_SETUP_NETNS_STACK"

const (
	eriMAC = "00:16:3e:aa:00:01"
	eriIP  = "10.0.1.11"
)

// TestNetnsSetupPerStack runs setup's os and limits stages for real, once
// per network configuration system, each in a re-executed child with
// private mount and network namespaces: an overlay over /etc and /var/lib
// (what the stage writes lands in the overlay's upper directory, so that
// directory is the exact list of changes), a primary eth0 with the default
// route, an unconfigured ERI netdev eri0 in eth0's subnet, and the ECS
// metadata fake at 100.100.100.200. The dry run changes no file and no
// netlink state; the run brings eri0 up with its address, its subnet route
// at metric 200 (no prefix route at metric 0 competing with eth0's), MTU
// 8500 (jumbo frames) and the files, which the stack's own tool accepts where
// Debian ships one; the rerun changes nothing.
func TestNetnsSetupPerStack(t *testing.T) {
	if s := os.Getenv(nsStackEnv); s != "" {
		stackChild(t, s)
		return
	}
	labtest.RequireNamespaces(t)
	for _, stack := range []string{doctor.StackNetplan, doctor.StackNetworkManager, doctor.StackIfcfg, doctor.StackNetworkd} {
		t.Run(stack, func(t *testing.T) {
			runStackChild(t, "TestNetnsSetupPerStack", nsStackEnv, stack, 2*time.Minute)
		})
	}
}

// runStackChild runs test again in this test binary, in private mount and
// network namespaces, with env=stack telling the child which network stack
// it plays; the child must pass.
func runStackChild(t *testing.T, test, env, stack string, timeout time.Duration) {
	netnstest.Rerun(t, test, env, stack, timeout, []string{"--mount", "--net"})
}

// overlay mounts an overlay over dir whose upper directory it returns.
func overlay(t *testing.T, base, dir string) string {
	name := strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_")
	upper, work := filepath.Join(base, name, "upper"), filepath.Join(base, name, "work")
	require.NoError(t, os.MkdirAll(upper, 0o755))
	require.NoError(t, os.MkdirAll(work, 0o755))
	require.NoError(t, syscall.Mount("overlay", dir, "overlay", 0,
		fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", dir, upper, work)))
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return upper
}

// tree lists every file under dir with its content (the overlay's changes).
func tree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	}))
	return out
}

// netState is every link, address and route of the namespace, as text.
func netState(t *testing.T) string {
	var lines []string
	links, err := netlink.LinkList()
	require.NoError(t, err)
	for _, l := range links {
		a := l.Attrs()
		// RUNNING follows the carrier, which the kernel sets on its own time.
		lines = append(lines, fmt.Sprintf("link %s mtu %d flags %v", a.Name, a.MTU, a.Flags&^net.FlagRunning))
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		for _, ad := range addrs {
			lines = append(lines, fmt.Sprintf("addr %s %s flags %d", a.Name, ad.IPNet, ad.Flags))
		}
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, r := range routes {
		lines = append(lines, "route "+r.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func stackChild(t *testing.T, stack string) {
	require.NoError(t, syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""))
	base := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", base, "tmpfs", 0, "size=64m"))
	t.Cleanup(func() { _ = syscall.Unmount(base, syscall.MNT_DETACH) })
	etcUpper := overlay(t, base, "/etc")
	varUpper := overlay(t, base, "/var/lib")

	lo := netnstest.Fresh(t)
	netnstest.ServeMetadata(t, lo, &ecsfake.Metadata{InstanceID: "i-setup", InstanceType: "ecs.ebmgn8is.32xlarge", Region: "cn-beijing",
		NICs: map[string]ecsfake.NIC{eriMAC: {IP: eriIP, CIDR: "10.0.1.0/24", Gateway: "10.0.1.253"}}})
	// The primary ENI: eth0 in the same vSwitch, default route at metric 0.
	netnstest.Primary(t, "10.0.1.10/24", "10.0.1.253", 0)
	netnstest.Veth(t, "eri0", eriMAC)

	// A file of someone else's where the stack keeps the ERI's: only a
	// marked block may be added.
	if stack == doctor.StackIfcfg {
		require.NoError(t, os.MkdirAll("/etc/sysconfig/network-scripts", 0o755))
		require.NoError(t, os.WriteFile("/etc/sysconfig/network-scripts/ifcfg-eri0", []byte("# cloud-init\nDEVICE=eri0\nBOOTPROTO=dhcp\n"), 0o644))
	}
	before := tree(t, etcUpper)
	jumbo := true
	opt := setup.Options{Only: []string{doctor.StageOS, doctor.StageLimits},
		Doctor: doctor.Options{Metadata: &erdma.MetadataClient{}, JumboFrames: &jumbo, SkipTools: true},
		Fix:    doctor.FixEnv{Netdevs: []string{"eri0"}, NetworkStack: stack},
		Now:    func() time.Time { return time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC) }}
	ctx := context.Background()

	// The dry run: a plan, and provably no change.
	netBefore := netState(t)
	dry := opt
	dry.DryRun = true
	plan, err := setup.Run(ctx, dry)
	require.NoError(t, err)
	assert.Equal(t, before, tree(t, etcUpper), "the dry run wrote nothing under /etc")
	assert.Empty(t, tree(t, varUpper), "the dry run kept no backup")
	assert.Equal(t, netBefore, netState(t), "the dry run changed no link, address or route")
	osStage := stageOf(t, plan, doctor.StageOS)
	assert.Equal(t, setup.StatusPlanned, osStage.Status, "%+v", osStage)
	cmds := commands(osStage)
	assert.Contains(t, cmds, "ip link set eri0 mtu 8500")
	// netplan and ifcfg cannot say noprefixroute: the address is /32 live
	// as in the file, so that the state at boot is the state now.
	if stack == doctor.StackNetplan || stack == doctor.StackIfcfg {
		assert.Contains(t, cmds, "ip addr add 10.0.1.11/32 dev eri0 noprefixroute")
	} else {
		assert.Contains(t, cmds, "ip addr add 10.0.1.11/24 dev eri0 noprefixroute")
	}
	// At least 200 (the erdma-controller's floor), above eth0's metric 0.
	assert.Contains(t, cmds, "ip route add 10.0.1.0/24 dev eri0 proto kernel scope link src 10.0.1.11 metric 200")
	assert.Contains(t, cmds, "ip route add default via 10.0.1.253 dev eri0 metric 200")
	assert.Equal(t, setup.VerdictPlanned, plan.Verdict)

	// The run.
	res, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	for _, s := range res.Stages {
		t.Logf("%s %s found %v changes %v notes %v %s %s", s.Name, s.Status, s.Found, commands(s), s.Notes, s.Blocked, s.Error)
	}
	assert.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageOS).Status)
	assert.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageLimits).Status)
	l, err := netlink.LinkByName("eri0")
	require.NoError(t, err)
	assert.Equal(t, 8500, l.Attrs().MTU)
	assert.NotZero(t, l.Attrs().Flags&net.FlagUp)
	routes, err := netlink.RouteList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	var subnet, def []int
	for _, r := range routes {
		switch {
		case r.Gw != nil:
			def = append(def, r.Priority)
		case r.Dst != nil && r.Dst.String() == "10.0.1.0/24":
			subnet = append(subnet, r.Priority)
		}
	}
	assert.Equal(t, []int{200}, subnet, "the subnet route above eth0's metric, no prefix route at metric 0")
	assert.Equal(t, []int{200}, def)

	files := tree(t, etcUpper)
	for p, c := range files {
		t.Logf("--- /etc/%s\n%s", p, c)
	}
	assert.Contains(t, files["security/limits.d/90-erdmakit-memlock.conf"], "root hard memlock unlimited")
	assert.Contains(t, files["systemd/system.conf.d/90-erdmakit-memlock.conf"], "DefaultLimitMEMLOCK=infinity")
	validateStack(t, stack, files)

	// Limits: systemd's own view of the merged system.conf.
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		out, err := exec.Command("systemd-analyze", "cat-config", "systemd/system.conf").CombinedOutput()
		require.NoError(t, err, "%s", out)
		_, after, ok := strings.Cut(string(out), "# /etc/systemd/system.conf.d/90-erdmakit-memlock.conf\n")
		assert.True(t, ok, "%s", out)
		assert.Contains(t, after, "[Manager]\nDefaultLimitMEMLOCK=infinity")
	} else if labtest.InCI() {
		t.Fatal("systemd-analyze missing (CI=true)")
	}

	// Reverts: every change, the backup of the file that was there.
	assert.NotEmpty(t, res.Reverts)
	for _, r := range res.Reverts {
		assert.NotEmpty(t, r.Command, "%+v", r)
	}
	if stack == doctor.StackIfcfg {
		assert.Contains(t, files["sysconfig/network-scripts/ifcfg-eri0"], "# cloud-init\nDEVICE=eri0\nBOOTPROTO=dhcp\n# BEGIN erdmakit setup eri\n")
		bk := tree(t, varUpper)
		assert.Equal(t, "# cloud-init\nDEVICE=eri0\nBOOTPROTO=dhcp\n", bk["erdmakit/setup/backup/20261204T050000Z/etc/sysconfig/network-scripts/ifcfg-eri0"], "%v", bk)
	}

	// The rerun changes nothing.
	again, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	assert.Zero(t, again.Changed, "%+v", again.Stages)
	for _, s := range again.Stages {
		if s.Name == doctor.StageOS || s.Name == doctor.StageLimits {
			assert.Equal(t, setup.StatusUnchanged, s.Status, "%s: %v", s.Name, commands(s))
		}
	}
	assert.Equal(t, files, tree(t, etcUpper))
}

func stageOf(t *testing.T, r *setup.Result, name string) setup.StageResult {
	for _, s := range r.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stage %s", name)
	return setup.StageResult{}
}

func commands(s setup.StageResult) []string {
	var out []string
	for _, c := range s.Changes {
		out = append(out, c.Command)
	}
	return out
}

// validateStack runs the network stack's own parser on what was written.
func validateStack(t *testing.T, stack string, files map[string]string) {
	switch stack {
	case doctor.StackNetplan:
		c := files["netplan/60-erdmakit-eri0.yaml"]
		require.NotEmpty(t, c)
		if _, err := exec.LookPath("netplan"); err != nil {
			if labtest.InCI() {
				t.Fatal("netplan missing (CI=true)")
			}
			t.Log("netplan not installed: not validated")
			return
		}
		root := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/netplan"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/netplan/60-erdmakit-eri0.yaml"), []byte(c), 0o600))
		out, err := exec.Command("netplan", "generate", "--root-dir", root).CombinedOutput()
		require.NoError(t, err, "netplan generate: %s", out)
		gen := tree(t, filepath.Join(root, "run/systemd/network"))
		var all string
		for _, v := range gen {
			all += v
		}
		assert.Contains(t, all, "MTUBytes=8500")
		assert.Contains(t, all, "Address=10.0.1.11/32")
		assert.Contains(t, all, "Destination=10.0.1.0/24")
		assert.Contains(t, all, "Metric=200")
	case doctor.StackNetworkManager:
		c := files["NetworkManager/system-connections/erdmakit-eri0.nmconnection"]
		require.NotEmpty(t, c)
		assert.Contains(t, c, "route-metric=200")
		validateKeyfile(t, c)
	case doctor.StackIfcfg:
		assert.Contains(t, files["sysconfig/network-scripts/ifcfg-eri0"], "IPADDR=10.0.1.11\nPREFIX=32\nMTU=8500\nIPV4_ROUTE_METRIC=200\n")
		assert.Contains(t, files["sysconfig/network-scripts/route-eri0"], "10.0.1.0/24 dev eri0 scope link src 10.0.1.11 metric 200\ndefault via 10.0.1.253 dev eri0 metric 200 onlink\n")
		// ifcfg is shell: it must parse as one.
		out, err := exec.Command("sh", "-n", "/etc/sysconfig/network-scripts/ifcfg-eri0").CombinedOutput()
		require.NoError(t, err, "%s", out)
	case doctor.StackNetworkd:
		c := files["systemd/network/05-erdmakit-eri0.network"]
		require.NotEmpty(t, c)
		assert.Contains(t, c, "AddPrefixRoute=no")
		if _, err := exec.LookPath("systemd-analyze"); err == nil {
			out, err := exec.Command("systemd-analyze", "cat-config", "systemd/network/05-erdmakit-eri0.network").CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Contains(t, string(out), "[Address]\nAddress=10.0.1.11/24\nAddPrefixRoute=no")
		}
	}
}

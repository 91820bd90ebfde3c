//go:build lab && linux && cgo

package setup_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/setup"
)

const labChildEnv = "ERDMAKIT_SETUP_LAB_CHILD"

// rxeStandIn replaces the two checks that identify eRDMA hardware (the
// driver and the device count), which Soft-RoCE cannot pass, by checks
// that the lab's rxe device is there: every other check is the doctor's.
func rxeStandIn(dev string) []doctor.Check {
	present := func(_ context.Context, in *doctor.Input) health.Finding {
		for _, d := range in.Inventory.Devices {
			if d.Name == dev {
				return health.Finding{Severity: health.OK, Summary: dev + " (Soft-RoCE) stands in for eRDMA in the lab"}
			}
		}
		return health.Finding{Severity: health.Fail, Summary: dev + " missing"}
	}
	return []doctor.Check{{ID: erdma.FindingERDMADevices, Run: present}, {ID: erdma.FindingERDMADriver, Run: present}}
}

// TestLabSetupFromUnconfigured: in the lab VM (a real kernel, rxe0 on
// eth0), in a private mount namespace with an overlay over /etc and
// /var/lib: eth0 without its address (rxe0's RoCE GID gone with it),
// memlock 64 KiB, no persistence. setup (os, gpu, limits, verify) brings
// eth0 back from the metadata service's answer, persists it, raises
// memlock, writes the limits files and the NCCL environment, and proves it:
// status ok (exit 0) with bw loopback measured on rxe0. The rerun changes
// nothing.
func TestLabSetupFromUnconfigured(t *testing.T) {
	labtest.Require(t)
	if os.Getenv(labChildEnv) != "1" {
		t.Logf("child:\n%s", labtest.RerunInMountNamespace(t, "TestLabSetupFromUnconfigured", labChildEnv, 4*time.Minute))
		return
	}
	// The guest's / is the host's tree over 9p, read-only, and its kernel
	// has no overlayfs module loaded: the files go to a tmpfs root
	// (FixEnv.Root), netlink and the limits to the real kernel. The files
	// themselves are validated per stack in TestNetnsSetupPerStack.
	require.NoError(t, syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""))
	base := t.TempDir()
	require.NoError(t, syscall.Mount("tmpfs", base, "tmpfs", 0, "size=64m"))
	t.Cleanup(func() { _ = syscall.Unmount(base, syscall.MNT_DETACH) })
	etcUpper := filepath.Join(base, "etc")

	dev, nd, ip := labtest.Device(), labtest.Netdev(), labtest.IP()
	l, err := netlink.LinkByName(nd)
	require.NoError(t, err)
	mac := l.Attrs().HardwareAddr.String()
	// No instance type: a GPU type would make the missing NVIDIA driver block the gpu stage.
	md := &ecsfake.Metadata{InstanceID: "i-lab", Region: "cn-lab",
		NICs: map[string]ecsfake.NIC{mac: {IP: ip, CIDR: "10.0.9.0/24", Gateway: "10.0.9.254"}}}
	srv := httptest.NewServer(md)
	defer srv.Close()

	// The unconfigured ERI: no address (and so no RoCE v2 IPv4 GID), and
	// erdmakit's own memlock at 64 KiB.
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, a := range addrs {
		require.NoError(t, netlink.AddrDel(l, &a))
	}
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}))

	opt := setup.Options{Skip: []string{doctor.StageCloud, doctor.StageDriver},
		Doctor: doctor.Options{Metadata: &erdma.MetadataClient{BaseURL: srv.URL, Timeout: 20 * time.Second}, InstanceType: "", SkipTools: true,
			Verbs: verbsprobe.Live{}, Checks: rxeStandIn(dev)},
		Fix:           doctor.FixEnv{Root: base, Metadata: &erdma.MetadataClient{BaseURL: srv.URL, Timeout: 20 * time.Second}, Netdevs: []string{nd}, NetworkStack: doctor.StackNetworkd},
		VerifyOptions: setup.VerifyOptions{Devices: []string{dev}, Config: perf.Config{Size: 65536, QPs: 1, Iterations: 200}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	for _, s := range res.Stages {
		t.Logf("%s %s found %v changes %v notes %v blocked %q %s", s.Name, s.Status, s.Found, commands(s), s.Notes, s.Blocked, s.Error)
	}
	for _, l := range res.Left {
		t.Logf("left: %s %s %s", l.Severity, l.Check, l.Summary)
	}
	t.Logf("setup took %s; verdict %s", time.Since(start), res.Verdict)
	assert.Equal(t, health.OK, res.Status, "exit 0")
	assert.Equal(t, setup.VerdictProven, res.Verdict)
	assert.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageOS).Status)
	assert.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageLimits).Status)
	require.NotNil(t, res.Bandwidth)
	require.NotEmpty(t, res.Bandwidth.Results)
	assert.Positive(t, res.Bandwidth.Results[0].AvgGbps)
	t.Logf("bw loopback %s: %.3f Gbit/s", dev, res.Bandwidth.Results[0].AvgGbps)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim))
	assert.Equal(t, uint64(unix.RLIM_INFINITY), lim.Cur)
	addrs, err = netlink.AddrList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	assert.Equal(t, ip+"/24", addrs[0].IPNet.String())
	files := tree(t, etcUpper)
	assert.Contains(t, files["systemd/network/05-erdmakit-"+nd+".network"], "Address="+ip+"/24")
	assert.Contains(t, files["erdmakit/nccl.env"], "export NCCL_")

	again, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	assert.Equal(t, health.OK, again.Status)
	for _, s := range again.Stages {
		if s.Name != doctor.StageVerify {
			assert.Contains(t, []string{setup.StatusUnchanged, setup.StatusSkipped}, s.Status, "%s: %v", s.Name, commands(s))
		}
	}
	for _, s := range again.Stages {
		for _, c := range s.Changes {
			assert.False(t, c.Done, "rerun changed %s", c.Command)
		}
	}
	assert.Equal(t, files, tree(t, etcUpper), "the rerun wrote nothing")
	_ = strings.TrimSpace
	_ = net.IPv4len
}

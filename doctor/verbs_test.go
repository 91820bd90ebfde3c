package doctor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/ibverbs"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

func erdmaDev(name string, states ...string) erdma.Device {
	d := erdma.Device{Name: name, Driver: "erdma", ERDMA: true}
	for i, s := range states {
		d.Ports = append(d.Ports, erdma.Port{Number: i + 1, State: s})
	}
	return d
}

// providerRoot is a host root with the erdma provider's files, as
// rdma-core's ibverbs-providers installs them, where asked.
func providerRoot(t *testing.T, driverFile, so bool) string {
	root := t.TempDir()
	if driverFile {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/libibverbs.d"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/libibverbs.d/erdma.driver"), []byte("driver erdma\n"), 0o644))
	}
	if so {
		dir := filepath.Join(root, "usr/lib/x86_64-linux-gnu/libibverbs")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "liberdma-rdmav34.so"), nil, 0o644))
	}
	return root
}

func TestVerbsFinding(t *testing.T) {
	two := []erdma.Device{erdmaDev("erdma_0", "ACTIVE"), erdmaDev("erdma_1", "ACTIVE")}
	listed := doctor.VerbsProbe{Listed: []string{"erdma_0", "erdma_1"}, Devices: []doctor.VerbsDevice{
		{Name: "erdma_0", Ports: []doctor.VerbsPort{{Number: 1, State: "PORT_ACTIVE"}}},
		{Name: "erdma_1", Ports: []doctor.VerbsPort{{Number: 1, State: "PORT_ACTIVE"}}}}}
	for name, tc := range map[string]struct {
		root  string
		devs  []erdma.Device
		probe doctor.VerbsProbe
		sev   health.Severity
		want  []string // substrings of summary, evidence and remediation
	}{
		"no libibverbs": {devs: two, probe: doctor.VerbsProbe{LoadErr: ibverbs.ErrNotInstalled}, sev: health.Fail,
			want: []string{"libibverbs.so.1 cannot be loaded", "apt-get install libibverbs1 ibverbs-providers"}},
		"ok": {devs: two, probe: listed, sev: health.OK,
			want: []string{"libibverbs opens 2 device(s): erdma_0 port 1 PORT_ACTIVE, erdma_1 port 1 PORT_ACTIVE"}},
		"provider missing": {root: providerRoot(t, false, false), devs: two, probe: doctor.VerbsProbe{}, sev: health.Fail,
			want: []string{"libibverbs does not list erdma_0, erdma_1", "/etc/libibverbs.d/erdma.driver: missing",
				"liberdma-rdmav*.so: missing", "eRDMA userspace provider", "libibverbs lists: none"}},
		"driver file only": {root: providerRoot(t, true, false), devs: two, probe: doctor.VerbsProbe{}, sev: health.Fail,
			want: []string{"/etc/libibverbs.d/erdma.driver: present", "liberdma-rdmav*.so: missing"}},
		"so only": {root: providerRoot(t, false, true), devs: two[:1], probe: doctor.VerbsProbe{}, sev: health.Fail,
			want: []string{"/etc/libibverbs.d/erdma.driver: missing", "/usr/lib/x86_64-linux-gnu/libibverbs/liberdma-rdmav34.so: present"}},
		"open fails": {devs: two[:1], probe: doctor.VerbsProbe{Listed: []string{"erdma_0"}, Devices: []doctor.VerbsDevice{
			{Name: "erdma_0", OpenErr: &ibverbs.Error{Verb: "ibv_open_device", Device: "erdma_0", Errno: syscall.EACCES}}}},
			sev: health.Fail, want: []string{"cannot open or query", "ibv_open_device on erdma_0: permission denied"}},
		"states disagree": {devs: []erdma.Device{erdmaDev("erdma_0", "ACTIVE")}, probe: doctor.VerbsProbe{Listed: []string{"erdma_0"},
			Devices: []doctor.VerbsDevice{{Name: "erdma_0", Ports: []doctor.VerbsPort{{Number: 1, State: "PORT_DOWN"}}}}},
			sev: health.Warn, want: []string{"verbs says PORT_DOWN, sysfs says ACTIVE"}},
		"no devices": {probe: doctor.VerbsProbe{}, sev: health.Skip, want: []string{"no RDMA device in sysfs"}},
		"rxe lab": {root: t.TempDir(), devs: []erdma.Device{{Name: "rxe0", Ports: []erdma.Port{{Number: 1, State: "ACTIVE"}}}},
			probe: doctor.VerbsProbe{}, sev: health.Fail, want: []string{"/etc/libibverbs.d/rxe.driver: missing", "librxe-rdmav*.so"}},
	} {
		t.Run(name, func(t *testing.T) {
			root := tc.root
			if root == "" {
				root = t.TempDir()
			}
			f := doctor.VerbsFinding(root, tc.devs, tc.probe)
			assert.Equal(t, tc.sev, f.Severity, f.Summary)
			all := f.Summary + "\n" + strings.Join(f.Evidence, "\n") + "\n" + f.Remediation
			for _, w := range tc.want {
				assert.Contains(t, all, w)
			}
		})
	}
}

// TestVerbsCheckLive runs the check on this host: its libibverbs loads
// (whatever devices it has), or the finding says why not.
func TestVerbsCheckLive(t *testing.T) {
	f := liveVerbsFinding(t)
	_, err := (ibverbs.Loader{}).Load()
	if errors.Is(err, ibverbs.ErrNotSupported) || errors.Is(err, ibverbs.ErrNotInstalled) {
		assert.Equal(t, health.Fail, f.Severity, f.Summary)
		return
	}
	require.NoError(t, err)
	assert.NotContains(t, f.Summary, "cannot be loaded")
}

// TestVerbsCheckWithoutProbe: an importer that runs the doctor without a
// verbs probe (package doctor does not load libibverbs itself) gets the
// verbs check as skip, saying why, on the live host too.
func TestVerbsCheckWithoutProbe(t *testing.T) {
	rep, err := doctor.Run(context.Background(), erdma.LiveHost(), doctor.Options{SkipTools: true})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		if f.ID == doctor.FindingVerbs {
			assert.Equal(t, health.Skip, f.Severity)
			assert.Contains(t, f.Summary, "no verbs probe (doctor.Options.Verbs")
			return
		}
	}
	t.Fatal("no verbs finding")
}

func liveVerbsFinding(t *testing.T) health.Finding {
	t.Helper()
	rep, err := doctor.Run(context.Background(), erdma.LiveHost(), doctor.Options{SkipTools: true, Verbs: verbsprobe.Live{}})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		if f.ID == doctor.FindingVerbs {
			return f
		}
	}
	t.Fatal("no verbs finding")
	return health.Finding{}
}

const (
	verbsHiddenEnv   = "ERDMAKIT_VERBS_HIDDEN_CHILD"
	verbsParentNSEnv = "ERDMAKIT_VERBS_PARENT_MNTNS"
)

// TestVerbsLibraryHidden hides libibverbs behind an empty file in a private
// mount namespace: the check must fail naming the library and the install
// step, as on a host where nobody installed the userspace stack.
func TestVerbsLibraryHidden(t *testing.T) {
	if os.Getenv(verbsHiddenEnv) == "1" {
		verbsHiddenChild(t)
		return
	}
	if _, err := (ibverbs.Loader{}).Load(); errors.Is(err, ibverbs.ErrNotSupported) {
		t.Skip("ibverbs not built (no cgo)")
	}
	labtest.RequireNamespaces(t)
	if _, err := (ibverbs.Loader{}).Load(); err != nil {
		why := "needs libibverbs1 installed to hide it: " + err.Error()
		if labtest.InCI() {
			t.Fatalf("mount-namespace test %s (CI=true: failing instead of skipping)", why)
		}
		t.Skip(why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := execx.Command(ctx, "unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestVerbsLibraryHidden$", "-test.count=1", "-test.v")
	ns, err := os.Readlink("/proc/self/ns/mnt")
	require.NoError(t, err)
	cmd.Env = append(os.Environ(), verbsHiddenEnv+"=1", verbsParentNSEnv+"="+ns)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestVerbsLibraryHidden", "child:\n%s", out)
}

func verbsHiddenChild(t *testing.T) {
	// Refuse to mount anything unless this is a namespace of our own.
	self, err := os.Readlink("/proc/self/ns/mnt")
	require.NoError(t, err)
	parent := os.Getenv(verbsParentNSEnv)
	require.NotEmpty(t, parent)
	require.NotEqual(t, parent, self, "refusing: not in a private mount namespace")

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	hidden := 0
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64"} {
		real, err := filepath.EvalSymlinks(filepath.Join(dir, "libibverbs.so.1"))
		if err != nil {
			continue
		}
		require.NoError(t, syscall.Mount(empty, real, "", syscall.MS_BIND, ""), "hide %s", real)
		t.Cleanup(func() { _ = syscall.Unmount(real, 0) }) // before TempDir's removal
		hidden++
	}
	require.Positive(t, hidden, "found no libibverbs.so.1 to hide")
	f := liveVerbsFinding(t)
	assert.Equal(t, health.Fail, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "libibverbs.so.1 cannot be loaded")
	assert.Contains(t, strings.Join(f.Evidence, "\n"), "libibverbs.so.1")
	assert.Contains(t, f.Remediation, "apt-get install libibverbs1 ibverbs-providers")
}

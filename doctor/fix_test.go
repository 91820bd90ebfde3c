package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/hostconf"
)

func findingOf(rep *erdma.Report, id string) health.Finding {
	for _, f := range rep.Findings {
		if f.ID == id {
			return f
		}
	}
	return health.Finding{}
}

// TestFixPlanIsTheRemediation: the step a failing check prints is its
// fix's plan, command for command (one unit: advice and action cannot
// drift), and doctor --fix plans exactly those changes; the check's own
// remediation stays beside it, not overwritten.
func TestFixPlanIsTheRemediation(t *testing.T) {
	for host, check := range map[string]string{
		"memlock-64k":     erdma.FindingMemlock,
		"no-peermem":      erdma.FindingGDRPeermem,
		"port-down-no-ip": erdma.FindingNetdevIP,
	} {
		t.Run(host, func(t *testing.T) {
			dir := hostDir(t, host)
			h := erdma.RecordedHost(dir)
			rep, err := diagnoseRecorded(t, dir)
			require.NoError(t, err)
			f := findingOf(rep, check)
			require.Equal(t, health.Fail, f.Severity)
			plans, err := doctor.PlanFixes(context.Background(), h, rep, doctor.DefaultOptions(), &doctor.FixEnv{Describe: true})
			require.NoError(t, err)
			require.NotEmpty(t, plans)
			n := 0
			for _, p := range plans {
				for _, c := range p.Changes {
					if !contains(c.Checks, check) {
						continue
					}
					n++
					assert.Contains(t, f.Fix, c.Command)
				}
			}
			assert.Positive(t, n, "the fix plans something for %s", check)
			assert.True(t, strings.HasPrefix(f.Fix, "erdmakit doctor --fix (or: "), f.Fix)
			assert.Equal(t, f.Fix, f.Step(), "the fix is the step printed")
			assert.NotEmpty(t, f.Remediation, "the check's own advice is kept beside the fix")
			assert.NotContains(t, f.Remediation, "erdmakit doctor --fix", "the check's own words, not the plan's")
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestDoctorFixOnARecordedHost applies the fixes of a recorded host's
// failing checks to a copy of it (the files only: a recorded host has no
// live network): the files appear under the root, modprobe is run through
// FixEnv.Run, and a second plan of the same report changes no file.
func TestDoctorFixOnARecordedHost(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		host  string
		files map[string]string
		runs  []string
	}{
		{"memlock-64k", map[string]string{
			doctor.LimitsFile:        "root hard memlock unlimited",
			doctor.SystemdLimitsFile: "[Manager]\nDefaultLimitMEMLOCK=infinity\n"}, nil},
		{"no-peermem", map[string]string{doctor.PeermemFile: "\nnvidia_peermem\n"}, []string{"modprobe nvidia_peermem"}},
		{"iwarp-mode", map[string]string{doctor.CompatFile: "options erdma compat_mode=Y\n"}, nil},
	} {
		t.Run(tc.host, func(t *testing.T) {
			dir := hostDir(t, tc.host)
			h := erdma.RecordedHost(dir)
			rep, err := diagnoseRecorded(t, dir)
			require.NoError(t, err)
			var ran []string
			env := &doctor.FixEnv{Root: dir, Stamp: "t",
				Run: func(_ context.Context, argv []string) error { ran = append(ran, strings.Join(argv, " ")); return nil }}
			plans, err := doctor.PlanFixes(ctx, h, rep, doctor.DefaultOptions(), env)
			require.NoError(t, err)
			require.NotEmpty(t, plans)
			for _, p := range plans {
				require.NoError(t, doctor.Apply(ctx, p))
			}
			for path, want := range tc.files {
				b, err := os.ReadFile(filepath.Join(dir, path))
				require.NoError(t, err)
				assert.Contains(t, string(b), want)
				assert.True(t, hostconf.Owned(string(b)))
			}
			assert.Equal(t, tc.runs, ran)
			again, err := doctor.PlanFixes(ctx, h, rep, doctor.DefaultOptions(), env)
			require.NoError(t, err)
			for _, p := range again {
				for _, c := range p.Changes {
					assert.NotEqual(t, doctor.KindFile, c.Kind, "rerun: %s", c.Command)
				}
			}
		})
	}
}

// TestDriverStageWithoutTheDriver: the stage is blocked, names the guide's
// installer exactly, and with InstallDriver plans to run it then modprobe.
func TestDriverStageWithoutTheDriver(t *testing.T) {
	ctx := context.Background()
	dir := hostDir(t, "no-erdma-driver")
	h := erdma.RecordedHost(dir)
	rep, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	p, err := doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{})
	require.NoError(t, err)
	assert.Equal(t, "the eRDMA driver is not loaded", p.Blocked)
	assert.Contains(t, p.Next, "wget http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh && bash env_setup.sh --egs")
	assert.Contains(t, findingOf(rep, erdma.FindingERDMADriver).Remediation, "env_setup.sh --egs")

	var ran [][]string
	p, err = doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{InstallDriver: true,
		Run: func(_ context.Context, argv []string) error { ran = append(ran, argv); return nil }})
	require.NoError(t, err)
	assert.Empty(t, p.Blocked)
	require.NoError(t, doctor.Apply(ctx, p))
	require.Len(t, ran, 2)
	assert.Equal(t, doctor.InstallerCommand("unknown OS", ""), ran[0])
	assert.Equal(t, []string{"modprobe", "erdma"}, ran[1])
}

// TestIWARPCompatNeedsTheReloadFlag: compat mode goes to modprobe.d; the
// module is reloaded only with ReloadDriver.
func TestIWARPCompatNeedsTheReloadFlag(t *testing.T) {
	ctx := context.Background()
	dir := hostDir(t, "iwarp-mode")
	h := erdma.RecordedHost(dir)
	rep, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	p, err := doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{})
	require.NoError(t, err)
	assert.Equal(t, []string{"mkdir -p /etc/modprobe.d && printf '%s\\n' 'options erdma compat_mode=Y' > /etc/modprobe.d/erdmakit-erdma.conf"}, p.Commands())
	assert.Contains(t, strings.Join(p.Notes, " "), "--reload-driver")
	// A recorded host: files only, never a live modprobe (item 6 of setup-2).
	p, err = doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{ReloadDriver: true})
	require.NoError(t, err)
	assert.Len(t, p.Commands(), 1, "no modprobe on a recorded root")
	// Through the caller's own runner, the reload is planned.
	p, err = doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{ReloadDriver: true,
		Run: func(context.Context, []string) error { return nil }})
	require.NoError(t, err)
	assert.Equal(t, "modprobe -r erdma && modprobe erdma", p.Commands()[1])
}

// TestDetectNetworkStack: each system by its own files, netplan first.
func TestDetectNetworkStack(t *testing.T) {
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"etc/netplan/50-cloud-init.yaml", "etc/NetworkManager/system-connections/x.nmconnection"}, doctor.StackNetplan},
		{[]string{"etc/sysconfig/network-scripts/ifcfg-eth0", "etc/systemd/system/multi-user.target.wants/NetworkManager.service"}, doctor.StackIfcfg},
		{[]string{"etc/sysconfig/network-scripts/ifcfg-lo", "etc/systemd/system/multi-user.target.wants/NetworkManager.service"}, doctor.StackNetworkManager},
		{[]string{"etc/systemd/network/10-eth0.network"}, doctor.StackNetworkd},
		{[]string{"etc/hostname"}, ""},
	} {
		root := t.TempDir()
		for _, f := range tc.files {
			require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, f), nil, 0o644))
		}
		got, why, err := doctor.DetectNetworkStack(root)
		assert.Equal(t, tc.want, got, "%v: %s", tc.files, why)
		if tc.want == "" {
			assert.ErrorIs(t, err, doctor.ErrNoNetworkStack)
		}
	}
}

// TestMTUCheckJudgesByJumboFrames: the mtu check and the os stage ask the
// same fact (erdma.ERIMTU): 8500 without jumbo frames fails.
func TestMTUCheckJudgesByJumboFrames(t *testing.T) {
	dir := hostDir(t, "ebmgn8is-healthy")
	for _, tc := range []struct {
		jumbo *bool
		want  health.Severity
	}{{nil, health.OK}, {ptr(true), health.OK}, {ptr(false), health.Fail}} {
		opt := doctor.DefaultOptions()
		opt.JumboFrames = tc.jumbo
		rep, err := doctor.Run(context.Background(), erdma.RecordedHost(dir), opt)
		require.NoError(t, err)
		f := findingOf(rep, erdma.FindingMTU)
		assert.Equal(t, tc.want, f.Severity, f.Summary)
		if tc.want == health.Fail {
			assert.Contains(t, f.Summary, "jumbo frames not enabled")
			assert.Contains(t, f.Remediation, "mtu 1400")
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRecordedRootRunsNothing: doctor --fix on a directory root (no Run
// given) plans and writes files only: no modprobe, netlink or process
// change, and says so; the modules-load.d file is written all the same.
func TestRecordedRootRunsNothing(t *testing.T) {
	ctx := context.Background()
	dir := hostDir(t, "no-peermem")
	h := erdma.RecordedHost(dir)
	rep, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	plans, err := doctor.PlanFixes(ctx, h, rep, doctor.DefaultOptions(), &doctor.FixEnv{Root: dir, Stamp: "t", InstallDriver: true, ReloadDriver: true})
	require.NoError(t, err)
	require.NotEmpty(t, plans)
	var notes []string
	for _, p := range plans {
		for _, c := range p.Changes {
			assert.Equal(t, doctor.KindFile, c.Kind, "only files on a recorded root: %s", c.Command)
		}
		notes = append(notes, p.Notes...)
		require.NoError(t, doctor.Apply(ctx, p))
	}
	assert.Contains(t, strings.Join(notes, "\n"), doctor.NoLiveChanges)
	b, err := os.ReadFile(filepath.Join(dir, doctor.PeermemFile))
	require.NoError(t, err)
	assert.Contains(t, string(b), "nvidia_peermem")
}

// TestOneMTUForAllERIs: the mtu-mismatch recording (one ERI at 8500, one
// at 1400, jumbo frames unknown) gets one MTU for both in the files; with
// --jumbo-frames yes (Options.JumboFrames) both get 8500, whether or not
// the instance is known.
func TestOneMTUForAllERIs(t *testing.T) {
	ctx := context.Background()
	dir := hostDir(t, "mtu-mismatch")
	_ = os.Remove(filepath.Join(dir, "erdmakit/instance.json"))
	h := erdma.RecordedHost(dir)
	dead := metadataFake(t, map[string]string{})
	for _, tc := range []struct {
		jumbo *bool
		want  string
	}{{nil, "MTUBytes=1400"}, {ptr(true), "MTUBytes=8500"}, {ptr(false), "MTUBytes=1400"}} {
		opt := doctor.DefaultOptions()
		opt.JumboFrames = tc.jumbo
		opt.Metadata = dead
		rep, err := doctor.Run(ctx, h, opt)
		require.NoError(t, err)
		p, err := doctor.PlanStage(ctx, h, rep, opt, doctor.StageOS, &doctor.FixEnv{Root: dir, Metadata: dead, NetworkStack: doctor.StackNetworkd})
		require.NoError(t, err)
		var mtus []string
		for _, c := range p.Changes {
			if c.File != nil {
				for _, l := range strings.Split(c.File.Content, "\n") {
					if strings.HasPrefix(l, "MTUBytes=") {
						mtus = append(mtus, l)
					}
				}
			}
		}
		require.Len(t, mtus, 2, "%+v", p)
		assert.Equal(t, []string{tc.want, tc.want}, mtus, "jumbo %v", tc.jumbo)
	}
}

// TestInstallerPerOS: the guide's installer word for word, Ubuntu 24.04's
// own; the driver stage names the one for the host's os-release.
func TestInstallerPerOS(t *testing.T) {
	assert.Equal(t, "wget http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh && bash env_setup.sh --egs", erdma.InstallerCommand("alinux", "3"))
	assert.Equal(t, "rm -rf /lib/modules/$(uname -r)/updates/dkms/erdma.ko && curl -O http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh && "+
		`bash env_setup.sh --url "http://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.4.3.tar.gz"`, erdma.InstallerCommand("ubuntu", "24.04"))
	ctx := context.Background()
	dir := hostDir(t, "no-erdma-driver")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/os-release"), []byte("NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"24.04\"\n"), 0o644))
	h := erdma.RecordedHost(dir)
	rep, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	p, err := doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{})
	require.NoError(t, err)
	assert.Contains(t, p.Next, erdma.InstallerCommand("ubuntu", "24.04"))
	assert.Contains(t, p.Next, "(ubuntu 24.04)")
	assert.Contains(t, findingOf(rep, erdma.FindingERDMADriver).Remediation, "erdma_installer-1.4.3.tar.gz")
}

// TestJumboFlagWithoutTheInstance: --jumbo-frames no on a host whose
// instance is unknown still makes MTU 8500 a failure (it was ignored).
func TestJumboFlagWithoutTheInstance(t *testing.T) {
	dir := hostDir(t, "ebmgn8is-healthy")
	require.NoError(t, os.Remove(filepath.Join(dir, "erdmakit/instance.json")))
	opt := doctor.DefaultOptions()
	opt.JumboFrames = ptr(false)
	rep, err := doctor.Run(context.Background(), erdma.RecordedHost(dir), opt)
	require.NoError(t, err)
	f := findingOf(rep, erdma.FindingMTU)
	assert.Equal(t, health.Fail, f.Severity, f.Summary)
	assert.Contains(t, f.Summary, "jumbo frames not enabled")
	assert.Equal(t, health.Skip, findingOf(rep, erdma.FindingInstanceProfile).Severity, "the type stays unknown")
}

package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// TestFixesStayInsideTheRoot: every file a fix reads or writes under a host
// root goes through the root's confinement (os.Root, internal/hostconf): a
// symlink leading out of the root is refused, never followed, whether it is
// the file (etc/os-release: the driver stage's installer), a directory on
// the way (etc/modules-load.d: the gpu stage's file), or a directory a
// stage lists (etc/netplan: the os stage's network stack).
func TestFixesStayInsideTheRoot(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "os-release"), []byte("ID=ubuntu\nVERSION_ID=\"24.04\"\n"), 0o644))

	t.Run("read", func(t *testing.T) {
		dir := hostDir(t, "no-erdma-driver")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		require.NoError(t, os.Symlink(filepath.Join(outside, "os-release"), filepath.Join(dir, "etc/os-release")))
		rep, err := diagnoseRecorded(t, dir)
		require.NoError(t, err)
		p, err := doctor.PlanStage(ctx, erdma.RecordedHost(dir), rep, doctor.DefaultOptions(), doctor.StageDriver, &doctor.FixEnv{})
		require.NoError(t, err)
		assert.Contains(t, p.Next, "(unknown OS)", "the os-release outside the root was read")
		assert.Contains(t, p.Next, erdma.InstallerCommand("", ""))
		assert.NotContains(t, p.Next, "erdma_installer-1.4.3.tar.gz")
	})

	t.Run("write", func(t *testing.T) {
		dir := hostDir(t, "no-peermem")
		elsewhere := filepath.Join(outside, "modules-load.d")
		require.NoError(t, os.MkdirAll(elsewhere, 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(dir, "etc/modules-load.d")))
		rep, err := diagnoseRecorded(t, dir)
		require.NoError(t, err)
		h := erdma.RecordedHost(dir)
		p, err := doctor.PlanStage(ctx, h, rep, doctor.DefaultOptions(), doctor.StageGPU, &doctor.FixEnv{Root: dir, Stamp: "t"})
		if err == nil {
			err = doctor.Apply(ctx, p)
		}
		require.Error(t, err, "a write through a symlink out of the root")
		ents, rerr := os.ReadDir(elsewhere)
		require.NoError(t, rerr)
		assert.Empty(t, ents, "nothing written outside the root")
	})

	t.Run("list", func(t *testing.T) {
		dir := t.TempDir()
		elsewhere := filepath.Join(outside, "netplan")
		require.NoError(t, os.MkdirAll(elsewhere, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "50-cloud-init.yaml"), []byte("network: {version: 2}\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(dir, "etc/netplan")))
		stack, _, err := doctor.DetectNetworkStack(dir)
		if err == nil {
			assert.NotEqual(t, "netplan", stack, "netplan was seen through a symlink out of the root")
		}
	})
}

// TestFixAdviceIsAboutItsCheck: the plan's words replace a check's own
// advice only where the plan is about that check: on an iWARP host whose
// eadm is missing the driver stage is blocked on eadm, and transport-mode
// keeps its own advice (compat mode), not the installer's.
func TestFixAdviceIsAboutItsCheck(t *testing.T) {
	dir := hostDir(t, "iwarp-mode")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "erdmakit/tools.json"),
		[]byte(`[{"name":"eadm"},{"name":"ofed_info"}]`), 0o644))
	rep, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	require.Equal(t, health.Warn, findingOf(rep, erdma.FindingEadm).Severity)
	eadm := findingOf(rep, erdma.FindingEadm).Remediation
	assert.Contains(t, eadm, "env_setup.sh", "the blocked driver stage's next step is eadm's advice")
	tm := findingOf(rep, erdma.FindingTransportMode)
	require.Equal(t, health.Warn, tm.Severity)
	assert.Contains(t, tm.Remediation, "compat_mode=Y")
	assert.NotContains(t, tm.Remediation, "--install-driver", "the installer is eadm's step, not compat mode's")
}

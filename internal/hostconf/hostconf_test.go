package hostconf_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/hostconf"
)

func TestPlanAndApplyAFileErdmakitCreates(t *testing.T) {
	root := t.TempDir()
	f := &hostconf.Files{Root: root, Stamp: "s1"}
	c, err := f.PlanFile("/etc/x.d/a.conf", "k=v", "t", true, 0o644)
	require.NoError(t, err)
	assert.Equal(t, hostconf.Create, c.Action)
	_, err = os.Stat(filepath.Join(root, "etc/x.d/a.conf"))
	assert.ErrorIs(t, err, os.ErrNotExist, "planning writes nothing")

	old := syscall.Umask(0o077)
	require.NoError(t, f.Apply(&c))
	syscall.Umask(old)
	fi, err := os.Stat(filepath.Join(root, "etc/x.d/a.conf"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the umask is followed")
	assert.Equal(t, "rm /etc/x.d/a.conf", c.Revert)

	again, err := f.PlanFile("/etc/x.d/a.conf", "k=v\n", "t", true, 0o644)
	require.NoError(t, err)
	assert.Equal(t, hostconf.Unchanged, again.Action, "idempotent")

	upd, err := f.PlanFile("/etc/x.d/a.conf", "k=w", "t", true, 0o644)
	require.NoError(t, err)
	assert.Equal(t, hostconf.Update, upd.Action)
	require.NoError(t, f.Apply(&upd))
	assert.Equal(t, "/var/lib/erdmakit/setup/backup/s1/etc/x.d/a.conf", upd.Backup)
	b, err := os.ReadFile(filepath.Join(root, upd.Backup))
	require.NoError(t, err)
	assert.Equal(t, hostconf.Header+"\nk=v\n", string(b), "the previous version is kept")
	assert.Equal(t, "cp -p /var/lib/erdmakit/setup/backup/s1/etc/x.d/a.conf /etc/x.d/a.conf", upd.Revert)
}

func TestAFileErdmakitDidNotCreateGetsOnlyAMarkedBlock(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "etc/limits.conf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("# theirs\na b\n"), 0o640))
	f := &hostconf.Files{Root: root, Stamp: "s"}
	c, err := f.PlanFile("/etc/limits.conf", "x y", "memlock", true, 0o644)
	require.NoError(t, err)
	assert.Equal(t, hostconf.Block, c.Action)
	require.NoError(t, f.Apply(&c))
	b, _ := os.ReadFile(p)
	assert.Equal(t, "# theirs\na b\n# BEGIN erdmakit setup memlock\nx y\n# END erdmakit setup memlock\n", string(b))
	fi, _ := os.Stat(p)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "their mode is kept")

	// Their later edit stays; the block is replaced in place.
	require.NoError(t, os.WriteFile(p, append(b, []byte("c d\n")...), 0o640))
	c, err = f.PlanFile("/etc/limits.conf", "x z", "memlock", true, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Apply(&c))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "# theirs\na b\n# BEGIN erdmakit setup memlock\nx z\n# END erdmakit setup memlock\nc d\n", string(b))
	c, err = f.PlanFile("/etc/limits.conf", "x z", "memlock", true, 0o644)
	require.NoError(t, err)
	assert.Equal(t, hostconf.Unchanged, c.Action)

	// A format where a block cannot go: refused, the file untouched.
	_, err = f.PlanFile("/etc/limits.conf", "x", "", false, 0o644)
	assert.ErrorIs(t, err, hostconf.ErrForeign)
}

func TestApplyRefusesAFileChangedSincePlanned(t *testing.T) {
	root := t.TempDir()
	f := &hostconf.Files{Root: root}
	c, err := f.PlanFile("/etc/a", "v", "t", true, 0o644)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/a"), []byte("someone\n"), 0o644))
	assert.ErrorContains(t, f.Apply(&c), "changed since it was planned")
	b, _ := os.ReadFile(filepath.Join(root, "etc/a"))
	assert.Equal(t, "someone\n", string(b))
}

func TestBadPathsAndTargetsAreRefused(t *testing.T) {
	root := t.TempDir()
	f := &hostconf.Files{Root: root}
	for _, p := range []string{"etc/a", "/etc/../a", "/etc//a", ""} {
		_, err := f.PlanFile(p, "v", "t", true, 0o644)
		assert.ErrorIs(t, err, hostconf.ErrPath, p)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "etc/link")))
	_, err := f.PlanFile("/etc/link", "v", "t", true, 0o644)
	assert.ErrorContains(t, err, "not a regular file")
}

// TestWritesStayInsideTheRoot: a root whose etc (or a directory below it)
// is a symlink leading out of it, absolute or by "..", is refused at every
// read, plan and write; nothing lands outside, and no backup is made there.
func TestWritesStayInsideTheRoot(t *testing.T) {
	for name, target := range map[string]func(elsewhere string) string{
		"absolute": func(e string) string { return filepath.Join(e, "etc") },
		"dotdot":   func(e string) string { return "../elsewhere/etc" },
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			root, elsewhere := filepath.Join(base, "root"), filepath.Join(base, "elsewhere")
			require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "etc/netplan"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "etc/netplan/50-cloud-init.yaml"), []byte("network: {}\n"), 0o600))
			require.NoError(t, os.MkdirAll(root, 0o755))
			require.NoError(t, os.Symlink(target(elsewhere), filepath.Join(root, "etc")))
			f := &hostconf.Files{Root: root, Stamp: "s"}

			_, _, err := f.Read("/etc/netplan/50-cloud-init.yaml")
			require.Error(t, err, "a read through the link")
			assert.False(t, f.Exists("/etc/netplan/50-cloud-init.yaml"))
			names, _ := f.List("/etc/netplan")
			assert.Empty(t, names)
			_, err = f.PlanFile("/etc/security/limits.d/90-erdmakit-memlock.conf", "x", "memlock", true, 0o644)
			require.Error(t, err)
			c := hostconf.FileChange{Path: "/etc/netplan/60-erdmakit-eth1.yaml", Action: hostconf.Create, Content: "x\n", Mode: 0o600}
			require.Error(t, f.Apply(&c))
			require.Error(t, f.Put("/etc/erdmakit/nccl-graph.xml", []byte("x"), 0o644))

			var found []string
			require.NoError(t, filepath.WalkDir(elsewhere, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					found = append(found, p)
				}
				return err
			}))
			assert.Equal(t, []string{filepath.Join(elsewhere, "etc/netplan/50-cloud-init.yaml")}, found, "nothing written outside the root")
		})
	}
}

func TestRevertLinesAreShellQuoted(t *testing.T) {
	root := t.TempDir()
	f := &hostconf.Files{Root: root, Stamp: "s"}
	c, err := f.PlanFile("/etc/x/a b;$(touch z)", "k=v", "t", true, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Apply(&c))
	assert.Equal(t, `rm '/etc/x/a b;$(touch z)'`, c.Revert)
}

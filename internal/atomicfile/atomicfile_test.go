package atomicfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "erdmakit.prom")
	require.NoError(t, os.WriteFile(p, []byte("old\n"), 0o644))

	boom := errors.New("boom")
	err := Write(p, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	assert.ErrorIs(t, err, boom)
	b, _ := os.ReadFile(p)
	assert.Equal(t, "old\n", string(b), "a failed write leaves the old file")

	require.NoError(t, Write(p, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "new\n")
		return err
	}))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "new\n", string(b))
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1, "no temporary file left")
	fi, _ := os.Stat(p)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	err := Write(dir, 0o644, func(io.Writer) error { return nil })
	assert.ErrorIs(t, err, ErrNotRegular)
	_, err = os.Stat(dir)
	assert.NoError(t, err)
}

// TestWriteFollowsUmaskAndKeepsMode: issue 27 item 6. Outputs were forced
// to 0644 under umask 077, and a rerun turned an existing 0600 file (an
// unredacted recording) world-readable. A new file follows the umask; an
// existing one keeps its mode.
func TestWriteFollowsUmaskAndKeepsMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "host.tar.gz")
	write := func() {
		require.NoError(t, Write(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }))
	}
	write()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "umask 077")

	syscall.Umask(0o022)
	require.NoError(t, os.Chmod(p, 0o600))
	write()
	fi, err = os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "an existing file keeps its mode")
	require.NoError(t, os.Chmod(p, 0o640))
	write()
	fi, _ = os.Stat(p)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
}

// TestWriteRefusesLinksAndSpecialFiles: item 26, one rule for every
// output: a symlink is neither written through nor replaced, nor is a
// FIFO, a device or a directory.
func TestWriteRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
	link := filepath.Join(dir, "graph.xml")
	require.NoError(t, os.Symlink(victim, link))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	targets := map[string]string{link: "a symlink", fifo: "a FIFO", dir: "a directory"}
	if os.Geteuid() == 0 {
		chr := filepath.Join(dir, "null")
		require.NoError(t, syscall.Mknod(chr, syscall.S_IFCHR|0o666, 1<<8|3))
		targets[chr] = "a character device"
	}
	for p, kind := range targets {
		err := Write(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err })
		assert.ErrorIs(t, err, ErrNotRegular, p)
		assert.ErrorContains(t, err, "("+kind+")")
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.False(t, fi.Mode().IsRegular(), "%s is still %s", p, kind)
	}
	b, _ := os.ReadFile(victim)
	assert.Equal(t, "keep\n", string(b), "the link's target is untouched")
}

// TestStaleTemporariesAreRemoved: item 10. kill -9 of `record --out` left
// .NAME.tmp-* files (6 of 8 kills); the next write of the same target
// removes those whose writer is gone (and an earlier version's older than
// ten minutes), and leaves a live writer's, another host's, a recent
// earlier version's and other targets' alone.
func TestStaleTemporariesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "host.tar.gz")
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	host := hostTag()
	stale := filepath.Join(dir, ".host.tar.gz.tmp-"+host+"-"+strconv.Itoa(dead.Process.Pid)+"-0a1b2c")
	live := filepath.Join(dir, ".host.tar.gz.tmp-"+host+"-"+strconv.Itoa(os.Getpid())+"-0a1b2c")
	other := filepath.Join(dir, ".host.tar.gz.tmp-"+host+"x-"+strconv.Itoa(dead.Process.Pid)+"-0a1b2c")
	otherTarget := filepath.Join(dir, ".doctor.prom.tmp-"+host+"-"+strconv.Itoa(dead.Process.Pid)+"-0a1b2c")
	legacyOld := filepath.Join(dir, ".host.tar.gz.tmp-1234567")
	legacyNew := filepath.Join(dir, ".host.tar.gz.tmp-7654321")
	for _, f := range []string{stale, live, other, otherTarget, legacyOld, legacyNew} {
		require.NoError(t, os.WriteFile(f, []byte("partial"), 0o600))
	}
	hourAgo := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(legacyOld, hourAgo, hourAgo))
	require.NoError(t, Write(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }))
	for _, f := range []string{stale, legacyOld} {
		_, err := os.Stat(f)
		assert.ErrorIs(t, err, os.ErrNotExist, "%s: a killed writer's temporary file is removed", f)
	}
	for _, f := range []string{live, other, otherTarget, legacyNew} {
		_, err := os.Stat(f)
		assert.NoError(t, err, "%s is kept", f)
	}
}

// TestFileCommitAndClose: Create/Commit is Write for streams (a raw log);
// Close without Commit leaves the target as it was.
func TestFileCommitAndClose(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "raw.log")
	f, err := Create(p, 0o644)
	require.NoError(t, err)
	_, err = io.WriteString(f, "line\n")
	require.NoError(t, err)
	_, err = os.Stat(p)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing at the target before Commit")
	require.NoError(t, f.Commit())
	require.NoError(t, f.Close())
	b, _ := os.ReadFile(p)
	assert.Equal(t, "line\n", string(b))

	f, err = Create(p, 0o644)
	require.NoError(t, err)
	_, _ = io.WriteString(f, "other\n")
	require.NoError(t, f.Close())
	b, _ = os.ReadFile(p)
	assert.Equal(t, "line\n", string(b))
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1)
}

package hostgen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixturesUpToDate regenerates every fixture into a temporary directory
// and compares the files the generator owns with the committed archives.
func TestFixturesUpToDate(t *testing.T) {
	for _, s := range hostgen.Fixtures() {
		t.Run(s.Name, func(t *testing.T) {
			tmp := t.TempDir()
			require.NoError(t, hostgen.Write(tmp, s))
			committed := fixture.Host(t, s.Name)
			manifest, err := os.ReadFile(filepath.Join(tmp, hostgen.ManifestPath))
			require.NoError(t, err)
			for _, rel := range strings.Fields(string(manifest)) {
				want, got := filepath.Join(tmp, rel), filepath.Join(committed, rel)
				wi, err := os.Lstat(want)
				require.NoError(t, err)
				gi, err := os.Lstat(got)
				if !assert.NoError(t, err, "%s missing from testdata: run go run ./internal/hostgen/cmd/hostgen", rel) {
					continue
				}
				if wi.Mode()&os.ModeSymlink != 0 {
					require.NotZero(t, gi.Mode()&os.ModeSymlink, rel)
					wt, _ := os.Readlink(want)
					gt, _ := os.Readlink(got)
					assert.Equal(t, wt, gt, rel)
					continue
				}
				wb, _ := os.ReadFile(want)
				gb, _ := os.ReadFile(got)
				assert.Equal(t, string(wb), string(gb), "%s differs: run go run ./internal/hostgen/cmd/hostgen", rel)
			}
		})
	}
}

// TestWriteKeepsForeignFiles: regenerating leaves files the generator did not
// write (the nvml fixture's GPUs) and removes only its own stale files.
func TestWriteKeepsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	s := hostgen.Host("x", hostgen.HealthyNICs())
	require.NoError(t, hostgen.Write(dir, s))
	foreign := filepath.Join(dir, "sys/bus/pci/devices/0000:16:00.0")
	require.NoError(t, os.Symlink("../../../devices/pci0000:16/0000:16:00.0", foreign))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "erdmakit/nvml.json"), []byte("{}"), 0o644))

	s.Devices = s.Devices[:1]
	require.NoError(t, hostgen.Write(dir, s))
	_, err := os.Lstat(foreign)
	assert.NoError(t, err, "foreign symlink kept")
	_, err = os.Stat(filepath.Join(dir, "erdmakit/nvml.json"))
	assert.NoError(t, err, "foreign file kept")
	_, err = os.Lstat(filepath.Join(dir, "sys/class/infiniband/erdma_1"))
	assert.ErrorIs(t, err, os.ErrNotExist, "stale own file removed")
	_, err = os.Lstat(filepath.Join(dir, "sys/class/infiniband/erdma_0"))
	assert.NoError(t, err)
}

func TestEUI64(t *testing.T) {
	g, err := hostgen.EUI64("00:16:3e:2f:37:75")
	require.NoError(t, err)
	assert.Equal(t, "0216:3eff:fe2f:3775", g) // the domain doc's example
	_, err = hostgen.EUI64("nope")
	assert.Error(t, err)
}

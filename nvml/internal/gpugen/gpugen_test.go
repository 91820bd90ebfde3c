package gpugen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixturesUpToDate regenerates every spec into a scratch tree and
// compares each file it owns with testdata/hosts/<host>.tar.gz: run
// `go run ./nvml/internal/gpugen/cmd/gpugen` after changing a spec.
func TestFixturesUpToDate(t *testing.T) {
	for _, s := range Fixtures() {
		t.Run(s.Host, func(t *testing.T) {
			committed := fixture.Host(t, s.Host)
			tmp := t.TempDir()
			require.NoError(t, Write(tmp, s))
			want, err := os.ReadFile(filepath.Join(tmp, ManifestPath))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(committed, ManifestPath))
			require.NoError(t, err, "tree not generated")
			require.Equal(t, string(want), string(got), "owned files differ: regenerate")
			for _, rel := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				a, b := filepath.Join(tmp, rel), filepath.Join(committed, rel)
				if la, err := os.Readlink(a); err == nil {
					lb, err := os.Readlink(b)
					require.NoError(t, err, rel)
					assert.Equal(t, la, lb, rel)
					continue
				}
				ca, err := os.ReadFile(a)
				require.NoError(t, err, rel)
				cb, err := os.ReadFile(b)
				require.NoError(t, err, rel)
				assert.True(t, bytes.Equal(ca, cb), "%s differs: regenerate", rel)
			}
		})
	}
}

// Rewriting a tree removes the files an earlier run owned and this one
// does not, and nothing else.
func TestWriteRemovesOnlyItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "sys/class/infiniband/erdma_0")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o755))
	require.NoError(t, os.WriteFile(other, []byte("x"), 0o644))
	require.NoError(t, Write(dir, EightH20("h")))
	require.FileExists(t, filepath.Join(dir, "sys/devices/pci0000:9a/0000:9a:01.0/numa_node"))
	require.NoError(t, Write(dir, TwoL20VM("h")))
	assert.NoFileExists(t, filepath.Join(dir, "sys/devices/pci0000:9a/0000:9a:01.0/numa_node"))
	assert.FileExists(t, filepath.Join(dir, "sys/devices/pci0000:00/0000:00:07.0/numa_node"))
	assert.FileExists(t, other)
}

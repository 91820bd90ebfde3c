package nvml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree writes files (path -> content) under a temporary root.
// tree writes files under a new root; a content "-> TARGET" is a symlink.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

func TestReadGDR(t *testing.T) {
	for _, tc := range []struct {
		name       string
		files      map[string]string
		driver     string
		ready      bool
		path       string
		persistent bool
		known      bool
		missing    string
		fix        string
	}{
		{name: "peermem loaded", files: map[string]string{"sys/module/nvidia_peermem/version": "535.161.08\n", "sys/module/nvidia/version": "535.161.08\n"},
			driver: "535.161.08", ready: true, path: GDRPeermem},
		{name: "peermem persistent", files: map[string]string{"sys/module/nvidia_peermem/initstate": "live\n", "etc/modules-load.d/nvidia-peermem.conf": "# GDR\nnvidia-peermem\n"},
			driver: "535.161.08", ready: true, path: GDRPeermem, persistent: true, known: true},
		{name: "peermem from rc.local", files: map[string]string{"sys/module/nvidia_peermem/initstate": "live\n", "etc/rc.local": "modprobe nvidia_peermem\n"},
			driver: "535.161.08", ready: true, path: GDRPeermem, persistent: true, known: true},
		{name: "peermem not persistent", files: map[string]string{"sys/module/nvidia_peermem/initstate": "live\n", "etc/modules-load.d/erdma.conf": "erdma\n"},
			driver: "535.161.08", ready: true, path: GDRPeermem, known: true, fix: "/etc/modules-load.d/nvidia_peermem.conf"},
		{name: "legacy nv_peer_mem", files: map[string]string{"sys/module/nv_peer_mem/version": "1.1-0\n", "sys/kernel/mm/memory_peers/nv_mem/version": "1.1-0\n"},
			driver: "460.106.00", ready: true, path: GDRNvPeerMem},
		{name: "memory_peers only", files: map[string]string{"sys/kernel/mm/memory_peers/nv_mem_nc/version": "1.0\n"},
			ready: true, path: GDRMemoryPeers},
		{name: "driver 535 without peermem", files: map[string]string{"sys/module/nvidia/version": "535.161.08\n"},
			driver: "535.161.08", missing: "driver 535 >= 470 bundles nvidia_peermem but it is not loaded", fix: "modprobe nvidia_peermem"},
		{name: "old driver", files: map[string]string{"sys/module/nvidia/version": "460.106.00\n"},
			driver: "460.106.00", missing: "driver 460 predates nvidia_peermem", fix: "nv_peer_mem"},
		{name: "no driver", files: map[string]string{},
			missing: "no NVIDIA driver loaded", fix: "install and load the NVIDIA driver"},
		{name: "driver unknown", files: map[string]string{"sys/module/nvidia/initstate": "live\n"},
			missing: "driver version unknown", fix: "modprobe nvidia_peermem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := ReadGDR(t.Context(), tree(t, tc.files), tc.driver)
			assert.Equal(t, tc.ready, g.Ready)
			assert.Equal(t, tc.path, g.Path)
			assert.Equal(t, tc.persistent, g.Persistent)
			assert.Equal(t, tc.known, g.PersistenceKnown)
			if tc.missing != "" {
				assert.Contains(t, g.Missing, tc.missing)
			} else {
				assert.Empty(t, g.Missing)
			}
			if tc.fix != "" {
				assert.Contains(t, g.Remediation, tc.fix)
			}
			assert.NotEmpty(t, g.Evidence)
		})
	}
}

func TestReadGDRFixtures(t *testing.T) {
	g := ReadGDR(t.Context(), hostRoot(t, "ebmgn8is-healthy"), "535.161.08")
	assert.True(t, g.Ready)
	assert.Equal(t, GDRPeermem, g.Path)
	assert.Equal(t, "535.161.08", g.Version)
	assert.Contains(t, g.Evidence, "sys/module/nvidia_peermem: present")

	g = ReadGDR(t.Context(), hostRoot(t, "no-peermem"), "535.161.08")
	assert.False(t, g.Ready)
	assert.True(t, strings.HasPrefix(g.Missing, "driver 535 >= 470 bundles nvidia_peermem but it is not loaded; DMA-BUF: "), g.Missing)
	assert.Contains(t, g.Evidence, "sys/module/nvidia_peermem: absent")
	// The recording's Alibaba Cloud Linux 3 kernel predates 5.12.
	assert.Equal(t, SupportNo, g.DMABUF.Supported)
	assert.Contains(t, g.Evidence, "proc/sys/kernel/osrelease: 5.10.134-16.3.al8.x86_64 (< 5.12)")
}

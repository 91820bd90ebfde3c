package hostfs

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadAttr: a sysfs-shaped read through a confined root against
// os.ReadFile (the peer, unconfined) in the same run. "root-per-read" is
// what erdma.Host does (it holds no descriptor): open the root, read, close.
func BenchmarkReadAttr(b *testing.B) {
	root := b.TempDir()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:05.0/infiniband/erdma_0/ports/1")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "state"), []byte("4: ACTIVE\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:00:05.0/infiniband/erdma_0", filepath.Join(root, "sys/class/infiniband/erdma_0")); err != nil {
		b.Fatal(err)
	}
	const rel = "sys/class/infiniband/erdma_0/ports/1/state"
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(root, rel)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("root-open-once", func(b *testing.B) {
		r, err := Open(root)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		for b.Loop() {
			if _, err := r.ReadFile(rel, 64<<10); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("root-per-read", func(b *testing.B) {
		for b.Loop() {
			r, err := Open(root)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadFile(rel, 64<<10); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}

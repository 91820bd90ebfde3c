package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// ErrUnavailable is what every "the lab cannot start here" error wraps: qemu,
// the kernel, its modules or busybox are missing, or the guest never came up.
var ErrUnavailable = errors.New("lab unavailable")

// RootModules are the modules the guest needs, in the order their
// dependencies are resolved: crc32_generic first (without it `rdma link add`
// fails with "rdma_rxe: failed to add eth0"), then virtio for the NIC and the
// 9p shares, then the RDMA core, Soft-RoCE and the connection managers.
var RootModules = []string{
	"crc32_generic", "virtio_pci", "virtio_net", "9p", "9pnet_virtio",
	"ib_core", "ib_uverbs", "rdma_rxe", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm",
}

// Kernel is the installed kernel the guest boots.
type Kernel struct {
	Version string // "6.1.0-57-amd64"
	Image   string // /boot/vmlinuz-<Version>
	Modules string // /lib/modules/<Version>
}

// FindKernel picks the kernel installed under root (normally "/") that has
// both an image in boot/ and a module tree in lib/modules/; with several, the
// highest version in version order. An explicit version selects that one.
func FindKernel(root, version string) (Kernel, error) {
	images, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	var found []Kernel
	for _, img := range images {
		v := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		if version != "" && v != version {
			continue
		}
		mods := filepath.Join(root, "lib", "modules", v)
		if _, err := os.Stat(filepath.Join(mods, "modules.dep")); err != nil {
			continue
		}
		if f, err := os.Open(img); err != nil {
			return Kernel{}, fmt.Errorf("%w: kernel image %s is not readable (%v)", ErrUnavailable, img, err)
		} else {
			f.Close()
		}
		found = append(found, Kernel{Version: v, Image: img, Modules: mods})
	}
	if len(found) == 0 {
		want := "a kernel"
		if version != "" {
			want = "kernel " + version
		}
		return Kernel{}, fmt.Errorf("%w: no %s with both %s and %s (install linux-image-amd64)",
			ErrUnavailable, want, filepath.Join(root, "boot/vmlinuz-*"), filepath.Join(root, "lib/modules/*/modules.dep"))
	}
	sort.Slice(found, func(i, j int) bool { return versionLess(found[i].Version, found[j].Version) })
	return found[len(found)-1], nil
}

// versionLess compares kernel versions numerically field by field
// ("6.1.0-9" < "6.1.0-57").
func versionLess(a, b string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	fa, fb := split(a), split(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		if fa[i] == fb[i] {
			continue
		}
		var na, nb int
		_, ea := fmt.Sscanf(fa[i], "%d", &na)
		_, eb := fmt.Sscanf(fb[i], "%d", &nb)
		if ea == nil && eb == nil && na != nb {
			return na < nb
		}
		return fa[i] < fb[i]
	}
	return len(fa) < len(fb)
}

// ModuleOrder asks `modprobe --show-depends` for each of roots (for kernel
// version) and returns the module files to insmod, dependencies first, each
// once. Modules built into the kernel are left out.
func ModuleOrder(ctx context.Context, version string, roots []string) ([]string, error) {
	modprobe := "modprobe"
	if _, err := exec.LookPath(modprobe); err != nil {
		for _, p := range []string{"/usr/sbin/modprobe", "/sbin/modprobe"} {
			if _, err := os.Stat(p); err == nil {
				modprobe = p
				break
			}
		}
	}
	var all []string
	for _, m := range roots {
		out, err := execx.Output(ctx, modprobe, "-S", version, "--show-depends", m)
		if err != nil {
			return nil, fmt.Errorf("%w: modprobe --show-depends %s for %s: %v", ErrUnavailable, m, version, err)
		}
		paths, err := ParseShowDepends(strings.NewReader(string(out)))
		if err != nil {
			return nil, fmt.Errorf("modprobe --show-depends %s: %w", m, err)
		}
		all = append(all, paths...)
	}
	return dedupe(all), nil
}

func dedupe(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ParseShowDepends reads `modprobe --show-depends` output: "insmod <path>
// [options]" lines give module files in load order, "builtin <name>" lines
// are modules the kernel already has. Anything else is an error naming the
// line.
func ParseShowDepends(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var paths []string
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
		case f[0] == "builtin" && len(f) >= 2:
		case f[0] == "insmod" && len(f) >= 2:
			if !strings.HasSuffix(f[1], ".ko") && !strings.Contains(f[1], ".ko.") {
				return nil, fmt.Errorf("line %d: %q is not a module file", n, f[1])
			}
			paths = append(paths, f[1])
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", n, truncate(sc.Text(), 80))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return paths, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

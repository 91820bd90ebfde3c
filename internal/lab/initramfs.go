package lab

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Guest paths and the 9p share tags the init script and the qemu command
// line agree on.
const (
	TagHost   = "host"     // the host's / read-only
	TagLab    = "lab"      // the run's work dir, read-write
	GuestLab  = "/tmp/lab" // where the work dir appears after the chroot
	guestRoot = "/host"    // where the host tree is mounted before the chroot
)

// Initramfs is what the guest's initramfs holds: busybox, the modules in
// load order and the init script.
type Initramfs struct {
	Busybox string   // a static busybox (busybox-static's /bin/busybox)
	Modules []string // module files, in insmod order
}

// FindBusybox returns a statically linked busybox: busybox-static installs
// it as /bin/busybox; the dynamic one would not run before the chroot.
func FindBusybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if isStatic(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("busybox"); err == nil && isStatic(p) {
		return p, nil
	}
	return "", fmt.Errorf("%w: no statically linked busybox (install busybox-static)", ErrUnavailable)
}

// isStatic reports whether the ELF file at p has no program interpreter
// (PT_INTERP), i.e. runs before there is a root file system with ld.so.
func isStatic(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// InitScript is the guest's /init: it loads the modules, mounts the host tree
// (read-only) and the work dir (read-write), chroots into the host tree and
// runs the script named by the kernel argument erdmakit.script= from the work
// dir, then powers the VM off. Lines starting with "@@ERDMAKIT-LAB" are the
// markers the runner reads on the console.
func InitScript(modules []string) string {
	var b strings.Builder
	b.WriteString(`#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "@@ERDMAKIT-LAB $*" > /dev/console; }
die() { say "FATAL $*"; sync; reboot -f; sleep 5; exit 1; }
say BOOTED "$(cut -d' ' -f1 /proc/uptime)"
`)
	for _, m := range modules {
		fmt.Fprintf(&b, "insmod /modules/%s || die 'insmod %s failed'\n", filepath.Base(m), moduleName(m))
	}
	fmt.Fprintf(&b, `mkdir -p %[1]s
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose %[2]s %[1]s || die 'mount 9p %[2]s'
mount -t proc proc %[1]s/proc || die 'mount proc'
mount -t sysfs sysfs %[1]s/sys || die 'mount sysfs'
mount -t devtmpfs devtmpfs %[1]s/dev || die 'mount devtmpfs'
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts %[1]s/dev/pts 2>/dev/null; mount -t tmpfs tmpfs %[1]s/dev/shm 2>/dev/null
keep=
for a in $(cat /proc/cmdline); do case "$a" in erdmakit.keep=*) keep="$keep ${a#erdmakit.keep=}";; esac; done
n=0; for k in $keep; do n=$((n+1)); mkdir -p /keep$n; mount -o bind %[1]s$k /keep$n || die "bind $k"; done
for d in /tmp /run /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs %[1]s$d || die "tmpfs on $d"; done
n=0; for k in $keep; do n=$((n+1)); mkdir -p %[1]s$k; mount -o bind /keep$n %[1]s$k || die "bind back $k"; done
mkdir -p %[1]s%[3]s
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 %[4]s %[1]s%[3]s || die 'mount 9p %[4]s'
script=
for a in $(cat /proc/cmdline); do case "$a" in erdmakit.script=*) script="${a#erdmakit.script=}";; esac; done
[ -n "$script" ] || die 'no erdmakit.script= on the kernel command line'
hostname erdmakit-lab
say READY "$(cut -d' ' -f1 /proc/uptime)"
chroot %[1]s /bin/sh %[3]s/"$script" < /dev/null > /dev/console 2>&1
say EXIT $?
sync
umount %[1]s%[3]s 2>/dev/null
reboot -f
`, guestRoot, TagHost, GuestLab, TagLab)
	return b.String()
}

func moduleName(path string) string {
	base := filepath.Base(path)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return base
}

// Write writes the initramfs as an uncompressed newc cpio archive (the
// kernel unpacks it as is): /init, busybox, /modules/*.ko and the mount
// points init needs.
func (ir Initramfs) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &cpioWriter{w: bw, ino: 1}
	for _, d := range []string{"bin", "dev", "proc", "sys", "modules", "host", "tmp"} {
		if err := cw.dir(d); err != nil {
			return err
		}
	}
	if err := cw.file("dev/console", nil, 0o20600); err != nil { // char device 5:1
		return err
	}
	bb, err := os.ReadFile(ir.Busybox)
	if err != nil {
		return fmt.Errorf("%w: busybox: %v", ErrUnavailable, err)
	}
	if err := cw.file("bin/busybox", bb, 0o100755); err != nil {
		return err
	}
	if err := cw.file("init", []byte(InitScript(ir.Modules)), 0o100755); err != nil {
		return err
	}
	for _, m := range ir.Modules {
		if !strings.HasSuffix(m, ".ko") {
			return fmt.Errorf("%w: module %s is compressed; busybox insmod needs plain .ko files", ErrUnavailable, m)
		}
		b, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("%w: module: %v", ErrUnavailable, err)
		}
		if err := cw.file("modules/"+filepath.Base(m), b, 0o100644); err != nil {
			return err
		}
	}
	if err := cw.trailer(); err != nil {
		return err
	}
	return bw.Flush()
}

// BuildInitramfs writes the initramfs for kernel k to path.
func BuildInitramfs(ctx context.Context, k Kernel, path string) error {
	bb, err := FindBusybox()
	if err != nil {
		return err
	}
	mods, err := ModuleOrder(ctx, k.Version, RootModules)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := (Initramfs{Busybox: bb, Modules: mods}).Write(f); err != nil {
		f.Close()
		return fmt.Errorf("initramfs %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}

// cpioWriter writes the "newc" (070701) cpio format the kernel accepts.
type cpioWriter struct {
	w   io.Writer
	ino int
}

func (c *cpioWriter) dir(name string) error { return c.entry(name, nil, 0o40755, 0, 0) }

func (c *cpioWriter) file(name string, data []byte, mode uint32) error {
	if mode&0o170000 == 0o20000 { // character device: /dev/console is 5:1
		return c.entry(name, nil, mode, 5, 1)
	}
	return c.entry(name, data, mode, 0, 0)
}

func (c *cpioWriter) trailer() error { return c.entry("TRAILER!!!", nil, 0, 0, 0) }

func (c *cpioWriter) entry(name string, data []byte, mode uint32, rmaj, rmin int) error {
	nlink := 1
	if mode&0o170000 == 0o40000 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmaj, rmin, len(name)+1, 0)
	c.ino++
	buf := append([]byte(hdr), name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := c.w.Write(buf); err != nil {
		return fmt.Errorf("cpio %s: %w", name, err)
	}
	if len(data) > 0 {
		if _, err := c.w.Write(data); err != nil {
			return fmt.Errorf("cpio %s: %w", name, err)
		}
		if p := (4 - len(data)%4) % 4; p > 0 {
			if _, err := c.w.Write(make([]byte, p)); err != nil {
				return fmt.Errorf("cpio %s: %w", name, err)
			}
		}
	}
	return nil
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

package kubelab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysctls the kubelet sets (protectKernelDefaults: false): saved before it
// starts, written back on Close.
var sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// hostDirs are where the kubelet, containerd and CNI write outside the
// lab's scratch directory whatever their configuration: what appears there
// during the lab is removed on Close.
var hostDirs = []string{"/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd", "/var/run/netns", "/var/lib/kubelet", "/etc/cni"}

type hostState struct {
	sysctls map[string]string
	paths   map[string]bool
	// cgroups are the kubepods directories of the cgroup hierarchies that
	// did not exist before the lab (the kubelet's cgroupfs driver makes
	// them): removed, with what is under them, on Close.
	cgroups []string
}

func saveHostState() (*hostState, error) {
	h := &hostState{sysctls: map[string]string{}, paths: map[string]bool{}}
	for _, s := range sysctls {
		b, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("saving sysctl %s: %w", s, err)
		}
		h.sysctls[s] = strings.TrimSpace(string(b))
	}
	mounts, err := mounts()
	if err != nil {
		return nil, err
	}
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			if d := filepath.Join(m.point, "kubepods"); !exists(d) {
				h.cgroups = append(h.cgroups, d)
			}
		}
	}
	for _, d := range hostDirs {
		h.paths[d] = exists(d)
		_ = filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				h.paths[p] = true
			}
			return nil
		})
	}
	return h, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// restore writes the sysctls back and removes what appeared in hostDirs
// (deepest first; a directory only once empty). Mounts there are
// detached first.
func (h *hostState) restore() error {
	var errs []error
	for _, s := range sysctls {
		v, ok := h.sysctls[s]
		if !ok {
			continue
		}
		cur, err := os.ReadFile("/proc/sys/" + s)
		if err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+s, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", s, v, err))
		}
	}
	for _, d := range hostDirs {
		var added []string
		_ = filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err == nil && !h.paths[p] {
				added = append(added, p)
			}
			return nil
		})
		if len(added) == 0 {
			continue
		}
		if err := unmountUnder(d, func(mp string) bool { return !h.paths[mp] }); err != nil {
			errs = append(errs, err)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(added)))
		for _, p := range added {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing %s, which the lab left: %w", p, err))
			}
		}
	}
	for _, d := range h.cgroups {
		if err := removeCgroup(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes the cgroup directory d and those under it, deepest
// first (rmdir only: a cgroup's files go with it), retrying while the
// kernel still counts the ended processes (EBUSY).
func removeCgroup(d string) error {
	var dirs []string
	_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, p := range dirs {
		var err error
		for try := 0; try < 50; try++ {
			if err = syscall.Rmdir(p); err == nil || errors.Is(err, syscall.ENOENT) || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("removing the cgroup %s, which the kubelet made: %w", p, err)
		}
	}
	return nil
}

// LockFile is the file whose flock a running lab holds, so that a second
// one (another test binary: go test runs packages in parallel) waits.
var LockFile = filepath.Join(os.TempDir(), "erdmakit-kubelab.lock")

// hostLock takes LockFile's exclusive flock, waiting while another lab
// holds it, until ctx ends.
func hostLock(ctx context.Context, log *slog.Logger) (*os.File, error) {
	f, err := os.OpenFile(LockFile, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the lab's lock: %w", err)
	}
	for logged := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("the lab's lock %s: %w", LockFile, err)
		}
		if !logged {
			log.Info("kubelab: another lab runs on this machine; waiting", "lock", LockFile)
			logged = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another lab on this machine to end (%s): %w", LockFile, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// unmountUnder detaches every mount below dir that keep says to, deepest
// first (lazily: MNT_DETACH).
func unmountUnder(dir string, keep func(string) bool) error {
	mounts, err := mounts()
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		mp := mounts[i].point
		if !strings.HasPrefix(mp, prefix) || (keep != nil && !keep(mp)) {
			continue
		}
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

type mount struct{ point, fstype string }

// mounts are this mount namespace's mounts in mount order
// (/proc/self/mountinfo: the mount point is field 5, the type follows " - ").
func mounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := mount{point: unescapeMount(fields[4])}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				m.fstype = fields[i+1]
				break
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// shimTree is every process started by a containerd shim of this lab (the
// shims run in process groups of their own, so ending containerd's group
// leaves them and their containers): the shims, found by the containerd
// address on their command lines, and all their descendants.
func shimTree(address string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	var shims []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			// pid (comm) state ppid ...: comm may hold spaces and parens.
			if i := strings.LastIndexByte(string(st), ')'); i > 0 {
				if f := strings.Fields(string(st[i+1:])); len(f) > 1 {
					if pp, err := strconv.Atoi(f[1]); err == nil {
						parent[pid] = pp
					}
				}
			}
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cl), "\x00")
		if len(args) > 0 && strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			for _, a := range args {
				if a == address {
					shims = append(shims, pid)
					break
				}
			}
		}
	}
	in := map[int]bool{}
	for _, s := range shims {
		in[s] = true
	}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !in[pid] && in[pp] {
				in[pid] = true
				changed = true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// killAll sends SIGKILL to pids and waits up to timeout for them to go.
func killAll(pids []int, timeout time.Duration) error {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v outlived SIGKILL", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(st), ')')
	return i > 0 && i+2 < len(st) && st[i+2] == 'Z'
}

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/execx"
	"golang.org/x/sys/unix"
)

// RecordOptions say what Record copies.
type RecordOptions struct {
	Device  string   // "rxe0"
	Netdev  string   // "eth0"
	Modules []string // sys/module entries; default ib_core, ib_uverbs, rdma_rxe, rdma_ucm
}

// maxRecordFile is the largest file Record copies; bigger ones are skipped.
const maxRecordFile = 64 << 10

// Record copies the lab guest's RDMA host tree from root (normally "/")
// into dst in the recorded-host layout of testdata/hosts/README.md:
// sys/class/infiniband/<dev> and sys/class/infiniband_verbs (symlinks kept as
// symlinks with the guest's targets, the directories they point to copied),
// sys/class/net/<netdev> (address, mtu, operstate), sys/module/<m>
// (initstate, version, parameters), proc/sys/kernel/{osrelease,hostname},
// dev/infiniband/* as empty files, and erdmakit/netdevs.json and limits.json
// from `ip -j addr` and getrlimit, plus the raw `ip -j addr` and
// `ibv_devinfo -v` outputs beside them. Unreadable and huge files are
// skipped.
func Record(ctx context.Context, root, dst string, o RecordOptions) error {
	if o.Device == "" {
		o.Device = Device
	}
	if o.Netdev == "" {
		o.Netdev = Netdev
	}
	if len(o.Modules) == 0 {
		o.Modules = []string{"ib_core", "ib_uverbs", "rdma_rxe", "rdma_ucm"}
	}
	r := &recorder{root: root, dst: dst, seen: map[string]bool{}}
	if err := r.entry("sys/class/infiniband/"+o.Device, true); err != nil {
		return err
	}
	verbs, err := os.ReadDir(filepath.Join(root, "sys/class/infiniband_verbs"))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	for _, e := range verbs {
		if err := r.entry("sys/class/infiniband_verbs/"+e.Name(), true); err != nil {
			return err
		}
	}
	netdir := "sys/class/net/" + o.Netdev
	if err := r.entry(netdir, false); err != nil {
		return err
	}
	for _, f := range []string{"address", "mtu", "operstate"} {
		if err := r.entry(netdir+"/"+f, false); err != nil {
			return err
		}
	}
	for _, m := range o.Modules {
		d := "sys/module/" + m
		if _, err := os.Stat(filepath.Join(root, d)); err != nil {
			return fmt.Errorf("record: module %s is not loaded: %w", m, err)
		}
		if err := r.mkdir(d); err != nil {
			return err
		}
		for _, f := range []string{"initstate", "version"} {
			if err := r.entry(d+"/"+f, false); err != nil {
				return err
			}
		}
		if _, err := os.Stat(filepath.Join(root, d, "parameters")); err == nil {
			if err := r.entry(d+"/parameters", true); err != nil {
				return err
			}
		}
	}
	for _, f := range []string{"proc/sys/kernel/osrelease", "proc/sys/kernel/hostname"} {
		if err := r.entry(f, false); err != nil {
			return err
		}
	}
	if devs, err := os.ReadDir(filepath.Join(root, "dev/infiniband")); err == nil {
		for _, e := range devs {
			if err := r.write("dev/infiniband/"+e.Name(), nil); err != nil {
				return err
			}
		}
	}
	if root == "/" {
		if err := r.commands(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

type recorder struct {
	root, dst string
	seen      map[string]bool
}

func (r *recorder) mkdir(rel string) error {
	if err := os.MkdirAll(filepath.Join(r.dst, rel), 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

func (r *recorder) write(rel string, b []byte) error {
	if err := r.mkdir(filepath.Dir(rel)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.dst, rel), b, 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// entry copies root/rel: a symlink as a symlink (then the path it resolves
// to, as the kernel lays it out), a file's content, a directory's entries
// when recurse is set (otherwise the directory alone).
func (r *recorder) entry(rel string, recurse bool) error {
	if r.seen[rel] {
		return nil
	}
	r.seen[rel] = true
	src := filepath.Join(r.root, rel)
	fi, err := os.Lstat(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // optional: the kernel does not have it
		}
		return fmt.Errorf("record %s: %w", rel, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("record %s: %w", rel, err)
		}
		if err := r.mkdir(filepath.Dir(rel)); err != nil {
			return err
		}
		_ = os.Remove(filepath.Join(r.dst, rel))
		if err := os.Symlink(target, filepath.Join(r.dst, rel)); err != nil {
			return fmt.Errorf("record %s: %w", rel, err)
		}
		if filepath.IsAbs(target) {
			return nil
		}
		// Follow the link to the kernel's own layout, except the class and
		// driver back-links every sysfs object has.
		base := filepath.Base(rel)
		if base == "subsystem" || base == "driver" || base == "device" || base == "firmware_node" || base == "of_node" {
			return nil
		}
		resolved := filepath.Clean(filepath.Join(filepath.Dir(rel), target))
		if strings.HasPrefix(resolved, "..") {
			return nil
		}
		if strings.HasPrefix(rel, "sys/class/net/") {
			return r.entry(resolved, false)
		}
		return r.entry(resolved, recurse)
	case fi.IsDir():
		if err := r.mkdir(rel); err != nil {
			return err
		}
		if !recurse {
			return nil
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return nil // unreadable directory: skipped
		}
		for _, e := range ents {
			if e.Name() == "power" || e.Name() == "uevent" {
				continue
			}
			if err := r.entry(rel+"/"+e.Name(), true); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		if fi.Mode().Perm()&0o444 == 0 {
			return nil // write-only attribute
		}
		b, err := readLimited(src, maxRecordFile)
		if err != nil {
			return nil // unreadable (EINVAL on unpopulated GID attributes) or huge: skipped
		}
		return r.write(rel, b)
	}
	return nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// ipAddr is the part of `ip -j addr` Record reads.
type ipAddr struct {
	Ifname    string `json:"ifname"`
	Address   string `json:"address"`
	PermAddr  string `json:"permaddr"`
	Operstate string `json:"operstate"`
	MTU       int    `json:"mtu"`
	AddrInfo  []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		Prefixlen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// NetdevsFromIPJSON turns `ip -j addr` output into the recorded-host
// netdevs.json entries (erdma.Netdev). The loopback device is left out.
func NetdevsFromIPJSON(b []byte) ([]erdma.Netdev, error) {
	var links []ipAddr
	if err := json.Unmarshal(b, &links); err != nil {
		return nil, fmt.Errorf("ip -j addr: %w", err)
	}
	var out []erdma.Netdev
	for _, l := range links {
		if l.Ifname == "" {
			return nil, fmt.Errorf("ip -j addr: a link without ifname")
		}
		if l.Ifname == "lo" {
			continue
		}
		nd := erdma.Netdev{Name: l.Ifname, MAC: l.Address, PermMAC: l.PermAddr, OperState: strings.ToLower(l.Operstate), MTU: l.MTU, IPv4: []string{}}
		for _, a := range l.AddrInfo {
			if a.Family == "inet" {
				nd.IPv4 = append(nd.IPv4, fmt.Sprintf("%s/%d", a.Local, a.Prefixlen))
			}
		}
		out = append(out, nd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// commands records what the kernel does not keep in files.
func (r *recorder) commands(ctx context.Context, o RecordOptions) error {
	ipj, err := execx.Output(ctx, "ip", "-j", "addr")
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	nds, err := NetdevsFromIPJSON(ipj)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	for i := range nds {
		if l, err := os.Readlink(filepath.Join(r.root, "sys/class/net", nds[i].Name, "device/driver")); err == nil {
			nds[i].Driver = filepath.Base(l)
		}
	}
	if err := r.writeJSON("erdmakit/netdevs.json", nds); err != nil {
		return err
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err == nil {
		lim := erdma.Limit{Soft: rl.Cur, Hard: rl.Max, Unlimited: rl.Cur == unix.RLIM_INFINITY}
		if err := r.writeJSON("erdmakit/limits.json", map[string]erdma.Limit{"memlock": lim}); err != nil {
			return err
		}
	}
	if err := r.write("erdmakit/ip-j-addr.json", ipj); err != nil {
		return err
	}
	dev, err := execx.Output(ctx, "ibv_devinfo", "-v", "-d", o.Device)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return r.write("erdmakit/ibv_devinfo-v.txt", dev)
}

func (r *recorder) writeJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: %w", rel, err)
	}
	return r.write(rel, append(b, '\n'))
}

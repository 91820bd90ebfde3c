package erdma

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/gid"
	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// Sysfs locations, relative to the host root.
const (
	ClassInfiniband = "sys/class/infiniband"
	ClassUVerbs     = "sys/class/infiniband_verbs"
	SysModule       = "sys/module"
	CompatModeParam = "sys/module/erdma/parameters/compat_mode"
)

// ERDMAPCIID is the eRDMA PCI function's vendor:device.
const ERDMAPCIID = "1ded:107f"

// WatchedModules returns the kernel modules the inventory reports, in order.
func WatchedModules() []string {
	return []string{"erdma", "ib_core", "ib_uverbs", "rdma_ucm", "nvidia", "nvidia_peermem", "nv_peer_mem", "memory_peers"}
}

// InventoryOptions tunes ReadInventory. The zero value reads everything.
type InventoryOptions struct {
	// SkipTools leaves Inventory.Tools empty (no programs are run).
	SkipTools bool
	// SkipCounters leaves Port.Counters empty (each read queries the device).
	SkipCounters bool
}

// ReadInventory reads everything the host shows about RDMA: devices, ports,
// GIDs, counters, the paired netdevs, kernel modules, RLIMIT_MEMLOCK and
// tools. It fills every field of Inventory except Instance, Profile and GPU.
//
// Reads that fail without making the rest meaningless (a garbled attribute,
// a netlink error, a tool that hangs) are collected in Inventory.Errors,
// each naming its file or source; the error return is for a root that cannot
// be read at all or a cancelled context.
func ReadInventory(ctx context.Context, h Host, opt InventoryOptions) (*Inventory, error) {
	if h.root == "" {
		return nil, errors.New("erdma: zero Host (use LiveHost, RecordedHost or OpenHost)")
	}
	if fi, err := statRoot(h); err != nil {
		return nil, fmt.Errorf("host root %s: %w", h.root, err)
	} else if !fi {
		return nil, fmt.Errorf("host root %s: %w", h.root, syscall.ENOTDIR)
	}
	inv := &Inventory{Root: h.Source(), Devices: []Device{}, Netdevs: []Netdev{}, Tools: []Tool{}}
	var stopped error // the first read ctx's end cut short
	addErr := func(err error) {
		if err == nil {
			return
		}
		if stopped == nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			stopped = err
		}
		inv.Errors = append(inv.Errors, err.Error())
	}
	var err error
	inv.Hostname, err = h.optAttr(ctx, "proc/sys/kernel/hostname")
	addErr(err)
	inv.Kernel, err = h.optAttr(ctx, "proc/sys/kernel/osrelease")
	addErr(err)

	devs, errs, err := readDevices(ctx, h, !opt.SkipCounters)
	if ctx.Err() != nil {
		return nil, cut(ctx, err, h.Path(ClassInfiniband))
	}
	addErr(err)
	inv.Errors = append(inv.Errors, errs...)
	if devs != nil {
		inv.Devices = devs
	}

	nds, err := h.Netdevs(ctx)
	addErr(err)
	if nds != nil {
		inv.Netdevs = nds
	}
	pairNetdevs(inv.Devices, inv.Netdevs)

	inv.Modules = readModules(ctx, h, addErr)

	inv.Memlock, err = h.Memlock(ctx)
	addErr(err)

	if !opt.SkipTools {
		tools, err := h.Tools(ctx)
		addErr(err)
		if tools != nil {
			inv.Tools = tools
		}
	}
	if ctx.Err() != nil {
		return nil, cut(ctx, stopped, h.Source())
	}
	return inv, nil
}

func statRoot(h Host) (bool, error) {
	// The root itself is what the user named; reads under it are confined.
	fi, err := os.Stat(h.root)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// ReadDevices reads every entry of sys/class/infiniband with its ports,
// GIDs and counters, in name order. It returns the devices, the non-fatal
// errors (each naming a file: the device is still listed with what could be
// read), and an error only when the class directory exists but cannot be
// listed. No sys/class/infiniband (no RDMA stack loaded) is no devices and
// no error. Netdev pairing by MAC and the recommended GID index need the
// netdevs: ReadInventory fills them; here Device.Netdev comes only from
// gid_attrs and RecommendedGIDIndex is -1. When ctx ends it stops and
// returns only an error that names the file being read and wraps ctx's.
func ReadDevices(ctx context.Context, h Host) ([]Device, []string, error) {
	return readDevices(ctx, h, true)
}

// readDevices is ReadDevices with counters optional.
func readDevices(ctx context.Context, h Host, counters bool) ([]Device, []string, error) {
	names, err := h.readDir(ctx, ClassInfiniband)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case ctx.Err() != nil:
		return nil, nil, cut(ctx, err, h.Path(ClassInfiniband))
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", h.Path(ClassInfiniband), err)
	}
	uverbs, errs := readUVerbs(ctx, h)
	compat, err := h.optAttr(ctx, CompatModeParam)
	if err != nil {
		errs = append(errs, err)
	}
	devs := make([]Device, 0, len(names))
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		d, derrs := readDevice(ctx, h, name, uverbs, compat, counters)
		devs = append(devs, d)
		errs = append(errs, derrs...)
	}
	if ctx.Err() != nil {
		return nil, nil, cut(ctx, firstCut(ctx, errs), h.Path(ClassInfiniband))
	}
	strs := make([]string, len(errs))
	for i, e := range errs {
		strs[i] = e.Error()
	}
	return devs, strs, nil
}

// firstCut is the first of errs that ctx's end caused (it names the file
// whose read was cut short), nil when none was.
func firstCut(ctx context.Context, errs []error) error {
	for _, e := range errs {
		if errors.Is(e, ctx.Err()) {
			return e
		}
	}
	return nil
}

// cut is the error for a read that ctx ended: err when it names the read
// it cut short, else what was being read with ctx's error.
func cut(ctx context.Context, err error, what string) error {
	if err != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%s: %w", what, ctx.Err())
}

// readUVerbs maps ibdev name -> uverbsN from sys/class/infiniband_verbs.
func readUVerbs(ctx context.Context, h Host) (map[string]string, []error) {
	m := map[string]string{}
	names, err := h.readDir(ctx, ClassUVerbs)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return m, []error{err}
		}
		return m, []error{fmt.Errorf("%s: %v", h.Path(ClassUVerbs), err)}
	}
	var errs []error
	for _, n := range names {
		if !strings.HasPrefix(n, "uverbs") {
			continue
		}
		ib, err := h.readAttr(ctx, path.Join(ClassUVerbs, n, "ibdev"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m[ib] = n
	}
	return m, errs
}

func readDevice(ctx context.Context, h Host, name string, uverbs map[string]string, compat string, counters bool) (Device, []error) {
	dir := path.Join(ClassInfiniband, name)
	d := Device{Name: name, NUMANode: -1, Transport: TransportUnknown, Ports: []Port{}}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	nodeCode := -1
	if s, err := h.readAttr(ctx, path.Join(dir, "node_type")); err != nil {
		note(err)
	} else if n, _, err := ParseEnumAttr(s); err != nil {
		note(fmt.Errorf("%s: %w", h.Path(dir, "node_type"), err))
		d.NodeType = truncate(s, 32)
	} else {
		d.NodeType, nodeCode = s, n
	}
	if s, err := h.readAttr(ctx, path.Join(dir, "node_guid")); err != nil {
		note(err)
	} else if _, err := parseGUID(s); err != nil {
		note(fmt.Errorf("%s: %w", h.Path(dir, "node_guid"), err))
	} else {
		d.NodeGUID = s
	}
	fw, err := h.optAttr(ctx, path.Join(dir, "fw_ver"))
	note(err)
	d.FWVer = fw

	// The PCI function: device -> ../../../0000:00:05.0 (absent for rxe and
	// other virtual devices).
	if t, err := h.readlink(ctx, path.Join(dir, "device")); err == nil {
		if b := path.Base(t); isPCIAddress(b) {
			d.PCIAddress = b
		}
		var vendor, device string
		if s, err := h.optAttr(ctx, path.Join(dir, "device", "vendor")); err != nil {
			note(err)
		} else if s != "" {
			v, err := ParsePCIID(s)
			note(wrapFile(h, path.Join(dir, "device", "vendor"), err))
			vendor = v
		}
		if s, err := h.optAttr(ctx, path.Join(dir, "device", "device")); err != nil {
			note(err)
		} else if s != "" {
			v, err := ParsePCIID(s)
			note(wrapFile(h, path.Join(dir, "device", "device"), err))
			device = v
		}
		if vendor != "" && device != "" {
			d.PCIID = vendor + ":" + device
		}
		if s, err := h.optAttr(ctx, path.Join(dir, "device", "numa_node")); err != nil {
			note(err)
		} else if s != "" {
			n, err := ParseNUMANode(s)
			note(wrapFile(h, path.Join(dir, "device", "numa_node"), err))
			d.NUMANode = n
		}
		if t, err := h.readlink(ctx, path.Join(dir, "device", "driver")); err == nil {
			d.Driver = path.Base(t)
		} else if !errors.Is(err, fs.ErrNotExist) {
			note(err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		note(err)
	}
	d.ERDMA = d.Driver == "erdma" || d.PCIID == ERDMAPCIID
	if d.ERDMA {
		d.CompatMode = compat
	}
	if u, ok := uverbs[name]; ok {
		d.UVerbs = u
		var err error
		d.UVerbsPresent, err = h.exists(ctx, path.Join("dev/infiniband", u))
		note(err)
	}

	ports, err := h.readDir(ctx, path.Join(dir, "ports"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		note(fmt.Errorf("%s: %w", h.Path(dir, "ports"), err))
	}
	nums := make([]int, 0, len(ports))
	for _, p := range ports {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 255 {
			note(fmt.Errorf("%s: %w: not a port number", h.Path(dir, "ports", p), ErrMalformed))
			continue
		}
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		p, perrs := readPort(ctx, h, name, n, d.ERDMA, counters)
		d.Ports = append(d.Ports, p)
		errs = append(errs, perrs...)
	}
	d.Transport = transportOf(nodeCode, compat, d)
	for _, p := range d.Ports {
		for _, g := range p.GIDs {
			if g.Netdev != "" && d.Netdev == "" {
				d.Netdev, d.NetdevBy = g.Netdev, "gid_attrs"
			}
		}
	}
	return d, errs
}

// transportOf decides the personality by connect.TransportOf (node_type and
// the first port's link layer that says something); without a readable CA
// or RNIC node_type, eRDMA's compat_mode decides.
func transportOf(nodeCode int, compat string, d Device) Transport {
	if nodeCode == 1 || nodeCode == 4 {
		t := connect.TransportOf(nodeCode, "")
		for _, p := range d.Ports {
			if t = connect.TransportOf(nodeCode, p.LinkLayer); t != TransportUnknown {
				break
			}
		}
		return t
	}
	if d.ERDMA {
		switch compat {
		case "Y", "1":
			return TransportRoCE
		case "N", "0":
			return TransportIWARP
		}
	}
	return TransportUnknown
}

func wrapFile(h Host, rel string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", h.Path(rel), err)
}

func readPort(ctx context.Context, h Host, dev string, n int, erdma, counters bool) (Port, []error) {
	dir := path.Join(ClassInfiniband, dev, "ports", strconv.Itoa(n))
	p := Port{Number: n, StateCode: -1, RecommendedGIDIndex: -1, GIDs: []GID{}, RateNominal: erdma}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if s, err := h.readAttr(ctx, path.Join(dir, "state")); err != nil {
		note(err)
	} else if code, name, err := ParseEnumAttr(s); err != nil {
		note(wrapFile(h, path.Join(dir, "state"), err))
	} else {
		p.StateCode, p.State = code, name
	}
	if s, err := h.optAttr(ctx, path.Join(dir, "phys_state")); err != nil {
		note(err)
	} else if s != "" {
		if _, name, err := ParseEnumAttr(s); err != nil {
			note(wrapFile(h, path.Join(dir, "phys_state"), err))
		} else {
			p.PhysState = name
		}
	}
	var err error
	p.LinkLayer, err = h.optAttr(ctx, path.Join(dir, "link_layer"))
	note(err)
	p.Rate, err = h.optAttr(ctx, path.Join(dir, "rate"))
	note(err)

	gids, err := h.readDir(ctx, path.Join(dir, "gids"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		note(fmt.Errorf("%s: %w", h.Path(dir, "gids"), err))
	}
	idx := make([]int, 0, len(gids))
	for _, g := range gids {
		i, err := strconv.Atoi(g)
		if err != nil || i < 0 {
			note(fmt.Errorf("%s: %w: not a GID index", h.Path(dir, "gids", g), ErrMalformed))
			continue
		}
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		si := strconv.Itoa(i)
		s, err := h.readAttr(ctx, path.Join(dir, "gids", si))
		if err != nil {
			if !errors.Is(err, errNoAttr) {
				note(err)
			}
			continue
		}
		ip, err := parseGID(s)
		if err != nil {
			note(wrapFile(h, path.Join(dir, "gids", si), err))
			continue
		}
		if isZero(ip) {
			continue // unpopulated
		}
		g := GID{Index: i, GID: formatGID(ip), IP: gidIPv4(ip)}
		g.Type, err = h.optAttr(ctx, path.Join(dir, "gid_attrs", "types", si))
		note(err)
		g.Netdev, err = h.optAttr(ctx, path.Join(dir, "gid_attrs", "ndevs", si))
		note(err)
		p.GIDs = append(p.GIDs, g)
	}
	if counters {
		c, err := ReadCounters(ctx, h, dev, n)
		note(err)
		if len(c) > 0 {
			p.Counters = c
		}
	}
	return p, errs
}

// ReadCounters reads sys/class/infiniband/<dev>/ports/<port>/hw_counters as
// name -> value, names as the driver spells them (out-of-tree eRDMA:
// "hw_tx_bytes_cnt"; upstream: "tx_bytes_cnt"). No hw_counters directory
// (drivers before r0.2.33) is an empty map and no error. A file that is not
// a decimal uint64 is left out of the map and named in the returned error
// (the other counters are still returned). One read per file, each a query
// of the device: when ctx ends first, the reads are abandoned and the error
// names the directory and wraps ctx's. ib_core's "lifespan" (a setting, not
// a counter) is skipped. To poll, use OpenCounters: it keeps the files open
// and reads them without allocating.
func ReadCounters(ctx context.Context, h Host, dev string, port int) (map[string]uint64, error) {
	c, err := OpenCounters(ctx, h, dev, port)
	if err != nil {
		return map[string]uint64{}, err
	}
	m := make(map[string]uint64, len(c.names))
	// The reads own c (an abandoned one closes it when it returns) and a
	// map of their own.
	_, err = ctxio.Do(ctx, func() (struct{}, error) {
		defer c.Close()
		return struct{}{}, c.Read(ctx, m)
	})
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return map[string]uint64{}, fmt.Errorf("%s: %w", c.dir, err)
	}
	return m, err
}

// CounterReader keeps one port's hw_counters files open so that each Read
// is one pread per counter and, once the map holds every name, allocates
// nothing. Each read queries the device: poll at human intervals.
type CounterReader struct {
	dir   string
	names []string
	files []*os.File // opened through the root; they own fds
	fds   []int      // their descriptors: one pread per counter
	buf   [64]byte
}

// OpenCounters opens every counter of sys/class/infiniband/<dev>/ports/<port>/hw_counters.
// No hw_counters directory gives a reader with no counters and no error.
// When ctx ends, what it opened is closed and the error names the file and
// wraps ctx's (an open of a sysfs file does not reach the driver; the
// reads do, and Read is the caller's to pace).
func OpenCounters(ctx context.Context, h Host, dev string, port int) (*CounterReader, error) {
	rel := path.Join(ClassInfiniband, dev, "ports", strconv.Itoa(port), "hw_counters")
	c := &CounterReader{dir: h.Path(rel)}
	names, err := h.readDir(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, cut(ctx, err, c.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	r, err := h.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, n := range names {
		if n == "lifespan" {
			continue
		}
		if err := ctx.Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s/%s: %w", c.dir, n, err)
		}
		if h.tr != nil {
			h.tr.add(h.tr.files, rel+"/"+n)
		}
		f, err := r.Open(rel + "/" + n)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.names = append(c.names, n)
		c.files = append(c.files, f)
		c.fds = append(c.fds, int(f.Fd()))
	}
	return c, nil
}

// Names are the counters, sorted.
func (c *CounterReader) Names() []string { return c.names }

// Read stores every counter's current value in m. A counter that cannot be
// read or parsed is left out and named in the error; the rest are stored.
// ctx is checked before each counter's read (each a query of the device):
// once it ends, Read stops there with an error naming the counter and
// wrapping ctx's. A read the driver never answers is the caller's to
// abandon (ReadCounters does).
func (c *CounterReader) Read(ctx context.Context, m map[string]uint64) error {
	var bad []error
	for i, fd := range c.fds {
		if fd < 0 {
			return fmt.Errorf("%s: %w", c.dir, fs.ErrClosed)
		}
		if err := ctx.Err(); err != nil {
			return errors.Join(append(bad, fmt.Errorf("%s/%s: %w", c.dir, c.names[i], err))...)
		}
		n, err := pread0(c.files[i], fd, c.buf[:])
		if err != nil {
			bad = append(bad, fmt.Errorf("%s/%s: %w", c.dir, c.names[i], err))
			continue
		}
		if n == len(c.buf) {
			bad = append(bad, fmt.Errorf("%s/%s: %w: counter longer than %d bytes", c.dir, c.names[i], ErrMalformed, len(c.buf)-1))
			continue
		}
		v, ok := parseCounterBytes(c.buf[:n])
		if !ok {
			bad = append(bad, fmt.Errorf("%s/%s: %w: counter %q is not a decimal uint64", c.dir, c.names[i], ErrMalformed, truncate(string(c.buf[:n]), 24)))
			continue
		}
		m[c.names[i]] = v
	}
	return errors.Join(bad...)
}

// Close closes the counter files; it is idempotent.
func (c *CounterReader) Close() error {
	var first error
	for i, f := range c.files {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
			c.files[i] = nil
			c.fds[i] = -1
		}
	}
	return first
}

// readModules reports the watched modules: loaded when sys/module/<name>
// exists; version from sys/module/<name>/version where present.
func readModules(ctx context.Context, h Host, note func(error)) []Module {
	names := WatchedModules()
	mods := make([]Module, 0, len(names))
	for _, name := range names {
		loaded, err := h.exists(ctx, path.Join(SysModule, name))
		note(err)
		m := Module{Name: name, Loaded: loaded}
		if m.Loaded {
			v, err := h.optAttr(ctx, path.Join(SysModule, name, "version"))
			note(err)
			m.Version = v
		}
		mods = append(mods, m)
	}
	return mods
}

// pairNetdevs finds each device's netdev and recommended GID index: first
// gid_attrs/ndevs (already in d.Netdev), then what the host's own lookup
// said (rdmamap on a live host: Netdev.RDMADevice), then the eRDMA rule: the
// netdev whose permanent MAC has node_guid as its EUI-64 (never
// device/net, which does not exist for eRDMA).
func pairNetdevs(devs []Device, nds []Netdev) {
	byName := make(map[string]*Netdev, len(nds))
	for i := range nds {
		byName[nds[i].Name] = &nds[i]
	}
	for i := range devs {
		d := &devs[i]
		if d.Netdev == "" {
			for _, n := range nds {
				if n.RDMADevice == d.Name {
					d.Netdev, d.NetdevBy = n.Name, "rdmamap"
					break
				}
			}
		}
		if d.Netdev == "" && d.NodeGUID != "" {
			if g, err := gid.ParseGUID(d.NodeGUID); err == nil {
				if mac, ok := g.MAC(); ok {
					for _, n := range nds {
						if sameMAC(netdevMAC(n), mac) {
							d.Netdev, d.NetdevBy = n.Name, "mac"
							break
						}
					}
				}
			}
		}
		nd := byName[d.Netdev]
		for j := range d.Ports {
			d.Ports[j].RecommendedGIDIndex = recommendedGID(d.Ports[j].GIDs, nd)
		}
	}
}

// netdevMAC is the MAC the driver pairs by: perm_addr, else address.
func netdevMAC(n Netdev) string {
	if n.PermMAC != "" {
		return n.PermMAC
	}
	return n.MAC
}

func sameMAC(s string, mac net.HardwareAddr) bool {
	hw, err := net.ParseMAC(s)
	return err == nil && len(hw) == len(mac) && string(hw) == string(mac)
}

// recommendedGID is gid.Choose's exact pick, with the paired netdev's
// IPv4 addresses: the lowest RoCE v2 entry whose GID is ::ffff:<an IPv4 of
// nd>; -1 when none (no netdev, no IPv4, no such entry).
func recommendedGID(gids []GID, nd *Netdev) int {
	if nd == nil {
		return -1
	}
	var local []netip.Addr
	for _, cidr := range nd.IPv4 {
		ip, _, _ := strings.Cut(cidr, "/")
		if a, err := netip.ParseAddr(ip); err == nil {
			local = append(local, a)
		}
	}
	if len(local) == 0 {
		return -1
	}
	entries := make([]gid.Entry, 0, len(gids))
	for _, g := range gids {
		if v, err := gid.Parse(g.GID); err == nil {
			entries = append(entries, gid.Entry{Index: g.Index, GID: v, RoCEv2: g.Type == "RoCE v2"})
		}
	}
	if i, exact := gid.Choose(entries, local); exact {
		return i
	}
	return -1
}

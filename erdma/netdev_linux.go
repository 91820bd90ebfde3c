package erdma

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Mellanox/rdmamap"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// liveNetdevs asks netlink; must run in the network namespace to inspect.
func liveNetdevs() ([]Netdev, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("netlink: listing links: %w", err)
	}
	nds := make([]Netdev, 0, len(links))
	var errs []string
	for _, l := range links {
		a := l.Attrs()
		if a.Flags&net.FlagLoopback != 0 || a.Name == "lo" {
			continue
		}
		n := Netdev{Name: a.Name, MAC: a.HardwareAddr.String(), OperState: a.OperState.String(), MTU: a.MTU,
			IPv4: []string{}}
		if len(a.PermHWAddr) > 0 && !isZero(a.PermHWAddr) {
			n.PermMAC = a.PermHWAddr.String()
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			errs = append(errs, fmt.Sprintf("netlink: addresses of %s: %v", a.Name, err))
		}
		for _, ad := range addrs {
			if ad.IPNet != nil {
				n.IPv4 = append(n.IPv4, ad.IPNet.String())
			}
		}
		if t, err := os.Readlink(filepath.Join("/sys/class/net", a.Name, "device/driver")); err == nil {
			n.Driver = filepath.Base(t)
		}
		if dev, err := rdmamap.GetRdmaDeviceForNetdevice(a.Name); err == nil {
			n.RDMADevice = dev
		}
		nds = append(nds, n)
	}
	sort.Slice(nds, func(i, j int) bool { return nds[i].Name < nds[j].Name })
	if len(errs) > 0 {
		return nds, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nds, nil
}

// liveMemlock is getrlimit(RLIMIT_MEMLOCK).
func liveMemlock() (*Limit, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return nil, fmt.Errorf("getrlimit(RLIMIT_MEMLOCK): %w", err)
	}
	return NewLimit(rl.Cur, rl.Max), nil
}

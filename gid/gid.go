// Package gid is the one parser of RDMA GIDs and GUIDs as sysfs and
// ibv_devinfo print them, and the one rule choosing the source GID index
// (erdma's doctor and inventory, ibverbs, bw, nccl env all use Choose). It
// imports only the standard library.
package gid

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrMalformed is what every parse error wraps.
var ErrMalformed = errors.New("malformed GID/GUID")

// GID is a 16-byte GID table entry.
type GID [16]byte

// Parse reads "fe80:0000:0000:0000:0216:3eff:fe2f:3775": 8 groups of 4 hex
// digits (surrounding space ignored).
func Parse(s string) (GID, error) {
	var g GID
	if err := parseGroups(strings.TrimSpace(s), g[:], "GID"); err != nil {
		return GID{}, err
	}
	return g, nil
}

// String is the sysfs form.
func (g GID) String() string { return formatGroups(g[:]) }

// IsZero reports an unpopulated entry.
func (g GID) IsZero() bool { return g == GID{} }

// IPv4 is the address of an IPv4-mapped GID (::ffff:a.b.c.d), the form
// RoCE v2 entries of an interface's IPv4 addresses take.
func (g GID) IPv4() (netip.Addr, bool) {
	a := netip.AddrFrom16(g)
	if !a.Is4In6() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// GUID is an 8-byte node or port GUID.
type GUID [8]byte

// ParseGUID reads "0216:3eff:fe2f:3775": 4 groups of 4 hex digits.
func ParseGUID(s string) (GUID, error) {
	var g GUID
	if err := parseGroups(strings.TrimSpace(s), g[:], "GUID"); err != nil {
		return GUID{}, err
	}
	return g, nil
}

// String is the sysfs form.
func (g GUID) String() string { return formatGroups(g[:]) }

// MAC is the MAC address an EUI-64 GUID was made from (0x02 bit of the
// first byte flipped back, ff:fe removed); false when g is not built from a
// MAC. eRDMA's node_guid is such a GUID of its ERI's MAC.
func (g GUID) MAC() (net.HardwareAddr, bool) {
	if g[3] != 0xff || g[4] != 0xfe {
		return nil, false
	}
	return net.HardwareAddr{g[0] ^ 0x02, g[1], g[2], g[5], g[6], g[7]}, true
}

// GUIDFromMAC is the EUI-64 GUID of a 6-byte MAC (0x02 bit of the first
// byte flipped, ff:fe inserted), as the eRDMA driver makes its node_guid;
// the inverse of GUID.MAC. false when mac is not 6 bytes.
func GUIDFromMAC(mac net.HardwareAddr) (GUID, bool) {
	if len(mac) != 6 {
		return GUID{}, false
	}
	return GUID{mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]}, true
}

func parseGroups(s string, out []byte, what string) error {
	groups := len(out) / 2
	if len(s) != groups*5-1 {
		return fmt.Errorf("%w: %s %q is not %d groups of 4 hex digits", ErrMalformed, what, truncate(s), groups)
	}
	for i := 0; i < len(out); i++ {
		at := i/2*5 + i%2*2
		if i%2 == 0 && i > 0 && s[at-1] != ':' {
			return fmt.Errorf("%w: %s %q is not %d groups of 4 hex digits", ErrMalformed, what, truncate(s), groups)
		}
		hi, ok1 := hexDigit(s[at])
		lo, ok2 := hexDigit(s[at+1])
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: %s %q is not %d groups of 4 hex digits", ErrMalformed, what, truncate(s), groups)
		}
		out[i] = hi<<4 | lo
	}
	return nil
}

func formatGroups(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(b)/2*5)
	for i, c := range b {
		if i%2 == 0 && i > 0 {
			out = append(out, ':')
		}
		out = append(out, hex[c>>4], hex[c&15])
	}
	return string(out)
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func truncate(s string) string {
	if len(s) > 48 {
		return s[:48] + "..."
	}
	return s
}

// Entry is a populated GID table entry as the choice needs it.
type Entry struct {
	Index  int
	GID    GID
	RoCEv2 bool // gid_attrs/types "RoCE v2" (IBV_GID_TYPE_ROCE_V2)
}

// Choose picks the source GID index the way the eRDMA guide and NCCL do:
// the lowest RoCE v2 entry holding an IPv4-mapped address, of one of local
// when local is given (the paired netdev's IPv4 addresses). exact reports
// that such an entry was found; otherwise index falls back to the first
// RoCE v2 entry, else the first populated entry, else -1, so a connection
// can still try. The doctor recommends only an exact index.
func Choose(entries []Entry, local []netip.Addr) (index int, exact bool) {
	first, v2, v2ip := -1, -1, -1
	for _, e := range entries {
		if e.GID.IsZero() {
			continue
		}
		if first < 0 {
			first = e.Index
		}
		if !e.RoCEv2 {
			continue
		}
		if v2 < 0 {
			v2 = e.Index
		}
		ip, ok := e.GID.IPv4()
		if !ok {
			continue
		}
		if len(local) == 0 {
			return e.Index, true
		}
		for _, a := range local {
			if a.Unmap() == ip {
				return e.Index, true
			}
		}
		if v2ip < 0 {
			v2ip = e.Index
		}
	}
	for _, i := range []int{v2ip, v2, first} {
		if i >= 0 {
			return i, false
		}
	}
	return -1, false
}

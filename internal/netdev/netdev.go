// Package netdev plans and makes one ERI netdev's live configuration through
// netlink: the MTU, the address with noprefixroute, link up, the subnet and
// default routes at the ERI's metric, and the kernel's metric-0 prefix route
// removed (it would compete with the primary ENI's route to the same
// vSwitch), as Alibaba's erdma-controller does. The doctor's os fix (setup's
// os stage) and `erdmakit eri configure` both plan through it, so the two
// cannot differ; it lives below both so that package eri does not import
// the doctor.
package netdev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

// Config is one ERI netdev's wanted live configuration.
type Config struct {
	Name    string
	Addr    *net.IPNet // the address with its prefix
	Gateway net.IP     // nil: no default route
	MTU     int
	Metric  int // of the subnet and default routes
	// HostPrefix configures the address as /32, the subnet route given
	// explicitly: what a configuration system without noprefixroute
	// (netplan, ifcfg) persists, so that the live state and the state at
	// boot are the same.
	HostPrefix bool
}

// Local is the address as configured on the netdev: Addr, or Addr/32 with
// HostPrefix.
func (c Config) Local() *net.IPNet {
	if c.HostPrefix {
		return &net.IPNet{IP: c.Addr.IP, Mask: net.CIDRMask(32, 32)}
	}
	return c.Addr
}

// ErrInvalid is what a value that cannot be a netdev name, a MAC, an IPv4
// address, prefix or gateway wraps: from the host, the metadata service or
// a flag, it is refused before anything is planned, never quoted around.
var ErrInvalid = errors.New("invalid value")

// ValidName checks a netdev name by the kernel's rules (dev_valid_name):
// 1 to 15 bytes, not "." or "..", no '/', ':' or white space; and, since
// the name goes into file names and configuration files, no control byte
// and nothing but UTF-8.
func ValidName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("netdev name %q: %s: %w", name, why, ErrInvalid)
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > 15:
		return bad("longer than 15 bytes (IFNAMSIZ)")
	case name == "." || name == "..":
		return bad("not a name")
	case !utf8.ValidString(name):
		// YAML, keyfiles and networkd's files are UTF-8 text.
		return bad("not UTF-8")
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '/' || c == ':':
			return bad(fmt.Sprintf("%q is not allowed", c))
		case c <= ' ' || c == 0x7f || c == 0xa0:
			return bad("white space or a control byte")
		}
	}
	return nil
}

// ValidMAC checks an Ethernet MAC ("00:16:3e:aa:00:01", any case) and
// returns it in lower case.
func ValidMAC(mac string) (string, error) {
	m := strings.ToLower(mac)
	ok := len(m) == 17
	for i := 0; ok && i < len(m); i++ {
		c := m[i]
		if i%3 == 2 {
			ok = c == ':'
		} else {
			ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
		}
	}
	if !ok {
		return "", fmt.Errorf("MAC %q: want six hex bytes (00:16:3e:aa:00:01): %w", mac, ErrInvalid)
	}
	return m, nil
}

// ParseIPv4 reads a dotted-quad IPv4 address, and nothing else (no IPv6,
// no IPv4-mapped IPv6, no leading zeros).
func ParseIPv4(what, s string) (net.IP, error) {
	ip := net.ParseIP(s)
	if ip == nil || ip.To4() == nil || strings.Contains(s, ":") {
		return nil, fmt.Errorf("%s %q: want an IPv4 address: %w", what, s, ErrInvalid)
	}
	return ip.To4(), nil
}

// ParseCIDR4 reads an IPv4 address with its prefix ("10.0.1.5/24"), the
// prefix 1 to 32, and nothing else.
func ParseCIDR4(what, s string) (*net.IPNet, error) {
	ip, n, err := net.ParseCIDR(s)
	if err != nil || ip.To4() == nil || len(n.Mask) != net.IPv4len || strings.Contains(s, ":") {
		return nil, fmt.Errorf("%s %q: want IPv4 with a prefix (10.0.1.5/24): %w", what, s, ErrInvalid)
	}
	if ones, _ := n.Mask.Size(); ones == 0 {
		return nil, fmt.Errorf("%s %q: prefix /0: %w", what, s, ErrInvalid)
	}
	return &net.IPNet{IP: ip.To4(), Mask: n.Mask}, nil
}

// Check validates a Config: the name by the kernel's rules, an IPv4
// address with a prefix of 1 to 32, a gateway (when set) that is IPv4,
// inside the subnet and not the address itself, an MTU of 68 to 65535 and
// a metric that is not negative.
func (c Config) Check() error {
	if err := ValidName(c.Name); err != nil {
		return err
	}
	if c.Addr == nil || c.Addr.IP.To4() == nil || len(c.Addr.Mask) != net.IPv4len {
		return fmt.Errorf("%s: address %v: want IPv4 with a prefix: %w", c.Name, c.Addr, ErrInvalid)
	}
	if ones, bits := c.Addr.Mask.Size(); bits != 32 || ones == 0 {
		return fmt.Errorf("%s: address %v: bad prefix: %w", c.Name, c.Addr, ErrInvalid)
	}
	if c.Gateway != nil {
		gw := c.Gateway.To4()
		if gw == nil || !c.Subnet().Contains(gw) || gw.Equal(c.Addr.IP) {
			return fmt.Errorf("%s: gateway %v: want an IPv4 address inside %s other than the address: %w", c.Name, c.Gateway, c.Subnet(), ErrInvalid)
		}
	}
	if c.MTU < 68 || c.MTU > 65535 {
		return fmt.Errorf("%s: MTU %d: %w", c.Name, c.MTU, ErrInvalid)
	}
	if c.Metric < 0 {
		return fmt.Errorf("%s: metric %d: %w", c.Name, c.Metric, ErrInvalid)
	}
	return nil
}

// Parse is the Config of an IPv4 address in CIDR form ("10.0.1.5/24") and a
// gateway ("" for none), validated (Check).
func Parse(name, address, gateway string, mtu, metric int) (Config, error) {
	a, err := ParseCIDR4(name+": address", address)
	if err != nil {
		return Config{}, err
	}
	c := Config{Name: name, Addr: a, MTU: mtu, Metric: metric}
	if gateway != "" {
		if c.Gateway, err = ParseIPv4(name+": gateway", gateway); err != nil {
			return Config{}, err
		}
	}
	return c, c.Check()
}

// Subnet is the network of the address.
func (c Config) Subnet() *net.IPNet {
	return &net.IPNet{IP: c.Addr.IP.Mask(c.Addr.Mask), Mask: c.Addr.Mask}
}

// Step is one planned netlink change: the doctor checks it serves, the
// netdev, the command a person would type for it and the one that undoes
// it, and Apply, which makes it.
type Step struct {
	Checks  []string
	Target  string
	Command string
	Revert  string
	Apply   func(ctx context.Context) error
}

// MinMetric is the lowest metric an ERI's routes get, whatever the primary
// ENI has at the time: Alibaba's erdma-controller never goes below it, and
// it stays above a DHCP primary's 100 even before that lease is up.
const MinMetric = 200

// Apply makes steps in order and stops at the first that fails (the error
// names its command; a rerun plans again from what is there).
func Apply(ctx context.Context, steps []Step) error {
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Apply(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.Command, err)
		}
	}
	return nil
}

// Commands are the steps as a person would type them, in order.
func Commands(steps []Step) []string {
	out := make([]string, 0, len(steps))
	for _, st := range steps {
		out = append(out, st.Command)
	}
	return out
}

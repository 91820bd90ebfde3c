package doctor

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostconf"
	"github.com/erdmakit/erdmakit/internal/netdev"
	"github.com/erdmakit/erdmakit/internal/shq"
)

// netFile is one file the os stage persists an ERI in.
type netFile struct {
	path, body, tag string
	blockOK         bool
	perm            uint32
}

// NetworkdFile is where the os stage persists an ERI for systemd-networkd:
// 05- sorts before the usual catch-alls (10-netplan-*, 20-wired, 80-*,
// 99-default), and networkd uses the first .network file that matches.
func NetworkdFile(netdev string) string {
	return "/etc/systemd/network/05-erdmakit-" + netdev + ".network"
}

// netFiles are the ERI's files in stack's own format, every value quoted
// for it: the reader gets back exactly the values written, and nothing runs
// (ifcfg is sourced by bash). Each is right at boot on its own: the routes
// at the ERI's metric, no kernel prefix route at metric 0 (noprefixroute
// where the format has it, else the address as /32 with the subnet route
// given), the one MTU, the default route on-link.
func netFiles(stack string, e eri) ([]netFile, error) {
	if err := e.config().Check(); err != nil {
		return nil, err
	}
	sub := e.subnet()
	gw := ""
	if e.gateway != nil {
		gw = e.gateway.String()
	}
	local := e.config().Local()
	switch stack {
	case StackNetplan:
		var b strings.Builder
		fmt.Fprintf(&b, "# ERI %s (eRDMA): address as /32, the subnet and default routes above the primary ENI's metric, MTU\n", strings.ToValidUTF8(strings.Map(printable, e.name), "?"))
		fmt.Fprintf(&b, "network:\n  version: 2\n  ethernets:\n    %s:\n", yamlQuote(e.name))
		fmt.Fprintf(&b, "      match:\n        macaddress: %s\n      mtu: %d\n      addresses: [%s]\n      routes:\n", yamlQuote(e.mac), e.mtu, yamlQuote(local.String()))
		fmt.Fprintf(&b, "        - to: %s\n          scope: link\n          from: %s\n          metric: %d\n", yamlQuote(sub.String()), yamlQuote(e.addr.IP.String()), e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "        - to: default\n          via: %s\n          on-link: true\n          metric: %d\n", yamlQuote(gw), e.metric)
		}
		return []netFile{{path: "/etc/netplan/60-erdmakit-" + e.name + ".yaml", body: b.String(), perm: 0o600}}, nil
	case StackNetworkManager:
		var b strings.Builder
		id := "erdmakit-" + e.name
		fmt.Fprintf(&b, "[connection]\nid=%s\nuuid=%s\ntype=ethernet\ninterface-name=%s\nautoconnect=true\n\n", keyfileEscape(id), uuidOf(id+e.mac), keyfileEscape(e.name))
		fmt.Fprintf(&b, "[ethernet]\nmac-address=%s\nmtu=%d\n\n", strings.ToUpper(e.mac), e.mtu)
		// route-metric is the metric of the prefix route too.
		fmt.Fprintf(&b, "[ipv4]\nmethod=manual\naddress1=%s\nroute-metric=%d\n", e.addr, e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "gateway=%s\n", gw)
		}
		b.WriteString("\n[ipv6]\nmethod=ignore\n")
		return []netFile{{path: "/etc/NetworkManager/system-connections/" + id + ".nmconnection", body: b.String(), perm: 0o600}}, nil
	case StackIfcfg:
		if strings.ContainsAny(e.name, "*?[\\") {
			// network-scripts reads route-DEV with `read line` (a backslash
			// is taken as an escape) and runs `ip route add $line` unquoted
			// (a glob is expanded).
			return nil, fmt.Errorf("netdev name %q: network-scripts reads route files unquoted and would expand it: %w", e.name, ErrInvalidValue)
		}
		// Both readers: NetworkManager's ifcfg-rh plugin and network-scripts
		// (ifup-eth adds IPADDR/PREFIX, ifup-routes runs `ip -4 route add
		// LINE` for each line of route-DEV). IPV4_ROUTE_METRIC is
		// NetworkManager's alone, so the address is /32 (no prefix route
		// from either) and route-DEV gives the subnet route first, then
		// the default route on-link, both at the metric.
		var b strings.Builder
		fmt.Fprintf(&b, "DEVICE=%s\nHWADDR=%s\nTYPE=Ethernet\nBOOTPROTO=none\nONBOOT=yes\nIPADDR=%s\nPREFIX=32\nMTU=%d\nIPV4_ROUTE_METRIC=%d\nDEFROUTE=no\n",
			shq.Quote(e.name), shq.Quote(e.mac), e.addr.IP, e.mtu, e.metric)
		route := fmt.Sprintf("%s dev %s scope link src %s metric %d\n", sub, e.name, e.addr.IP, e.metric)
		if gw != "" {
			route += fmt.Sprintf("default via %s dev %s metric %d onlink\n", gw, e.name, e.metric)
		}
		return []netFile{
			{path: "/etc/sysconfig/network-scripts/ifcfg-" + e.name, body: b.String(), tag: "eri", blockOK: true, perm: 0o644},
			{path: "/etc/sysconfig/network-scripts/route-" + e.name, body: route, tag: "eri", blockOK: true, perm: 0o644},
		}, nil
	case StackNetworkd:
		var b strings.Builder
		fmt.Fprintf(&b, "[Match]\nMACAddress=%s\n\n[Link]\nMTUBytes=%d\n\n[Network]\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n\n", e.mac, e.mtu)
		fmt.Fprintf(&b, "[Address]\nAddress=%s\nAddPrefixRoute=no\n\n[Route]\nDestination=%s\nScope=link\nPreferredSource=%s\nMetric=%d\n", e.addr, sub, e.addr.IP, e.metric)
		if gw != "" {
			fmt.Fprintf(&b, "\n[Route]\nGateway=%s\nGatewayOnLink=yes\nMetric=%d\n", gw, e.metric)
		}
		return []netFile{{path: NetworkdFile(e.name), body: b.String(), perm: 0o644}}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNoNetworkStack, stack)
}

// NetworkFiles are the files the os stage persists one ERI in, for stack
// (StackNetplan, ...), by path: the netdev name, MAC, address with its
// subnet's prefix ("10.0.1.11/24") and gateway ("" for none) validated
// first (ErrInvalidValue names what is wrong), every value then quoted for
// the file's format. Each file is right at boot on its own.
func NetworkFiles(stack, name, mac, addr, gw string, mtu, metric int) (map[string]string, error) {
	if err := netdev.ValidName(name); err != nil {
		return nil, err
	}
	m, err := netdev.ValidMAC(mac)
	if err != nil {
		return nil, err
	}
	c, err := netdev.Parse(name, addr, gw, mtu, metric)
	if err != nil {
		return nil, err
	}
	e := eri{name: name, mac: m, addr: c.Addr, gateway: c.Gateway, mtu: mtu, metric: metric, hostPrefix: stack == StackNetplan || stack == StackIfcfg}
	nf, err := netFiles(stack, e)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range nf {
		out[f.path] = f.body
	}
	return out, nil
}

// printable keeps a comment on one line.
func printable(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return '?'
	}
	return r
}

// yamlQuote is s as a YAML double-quoted scalar (JSON's string syntax is
// YAML's double-quoted style).
func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// keyfileEscape escapes a GKeyFile string value (NetworkManager's keyfile
// format): backslash, a leading space, tab, newline and carriage return.
func keyfileEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == ' ' && i == 0:
			b.WriteString(`\s`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// networkdDirs are where systemd-networkd reads .network files; a name in
// an earlier directory hides the same name in a later one.
var networkdDirs = []string{"/etc/systemd/network", "/run/systemd/network", "/usr/local/lib/systemd/network", "/usr/lib/systemd/network", "/lib/systemd/network"}

// shadowedBy names the .network file that systemd-networkd would use for
// the ERI instead of ours (it uses the first that matches, in lexical order
// of the file names): "" when none. netplan's files are networkd's too
// (10-netplan-ID.network) where netplan renders for networkd.
func shadowedBy(files *hostconf.Files, stack string, e eri, ours string) string {
	switch stack {
	case StackNetworkd:
		ours = path.Base(ours)
	case StackNetplan:
		ours = "10-netplan-" + e.name + ".network"
	default:
		return ""
	}
	seen := map[string]bool{}
	var names []string
	where := map[string]string{}
	for _, d := range networkdDirs {
		ents, _ := files.List(d)
		for _, n := range ents {
			if !strings.HasSuffix(n, ".network") || seen[n] {
				continue
			}
			seen[n] = true
			names = append(names, n)
			where[n] = path.Join(d, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if n >= ours {
			break
		}
		body, ok, err := files.Read(where[n])
		if err != nil || !ok || hostconf.Owned(body) {
			continue
		}
		if why := networkdMatches(body, e); why != "" {
			return fmt.Sprintf("%s would configure %s instead of erdmakit's %s (systemd-networkd uses the first .network file that matches, in lexical order): %s", where[n], e.name, ours, why)
		}
	}
	return ""
}

// networkdMatches says why a .network file's [Match] takes the ERI ("" when
// it does not): no [Match] or an empty one matches every link; Name= and
// MACAddress= are judged; any other key (Type=, Driver=, Path=...) is taken
// as matching, since it cannot be judged from here.
func networkdMatches(body string, e eri) string {
	section, any := "", false
	var names, macs, other []string
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(l, "[]")
			continue
		}
		if section != "Match" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		any = true
		switch k {
		case "Name", "OriginalName":
			names = append(names, strings.Fields(v)...)
		case "MACAddress", "PermanentMACAddress":
			macs = append(macs, strings.Fields(strings.ToLower(v))...)
		default:
			other = append(other, k+"="+v)
		}
	}
	if !any {
		return "it has no [Match]: it matches every link"
	}
	if len(names) > 0 && !globsMatch(names, e.name) {
		return ""
	}
	if len(macs) > 0 && !slices.Contains(macs, e.mac) {
		return ""
	}
	var why []string
	if len(names) > 0 {
		why = append(why, "Name="+strings.Join(names, " "))
	}
	if len(macs) > 0 {
		why = append(why, "MACAddress="+strings.Join(macs, " "))
	}
	why = append(why, other...)
	return "[Match] " + strings.Join(why, ", ")
}

// globsMatch is networkd's Name= list: fnmatch globs, "!" inverting.
func globsMatch(globs []string, name string) bool {
	invert := len(globs) > 0 && strings.HasPrefix(globs[0], "!")
	m := false
	for _, g := range globs {
		g = strings.TrimPrefix(g, "!")
		if ok, err := path.Match(g, name); err == nil && ok {
			m = true
		}
	}
	return m != invert
}

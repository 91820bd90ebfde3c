package erdma

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"net"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/gid"
)

// Redactor replaces identifying values consistently: within one Redactor the
// same input always maps to the same output.
//
//   - MACs keep their first three bytes when they are a vendor OUI (00:16:3e
//     on Alibaba Cloud) and get 00:00:01, 00:00:02, ... in order of
//     appearance; a locally administered (random) MAC has no OUI, all of it
//     identifies the host: it becomes 02:00:00:00:00:N.
//   - GPU UUIDs (GPU-..., MIG-...) become GPU-00000000-0000-0000-0000-00000000000N;
//     the region becomes xx-redacted.
//   - GUIDs that are the EUI-64 of a MAC become the EUI-64 of the redacted
//     MAC, so node_guid still pairs with the netdev; other GUIDs get
//     0000:0000:0000:000N.
//   - IPv4 addresses keep their last byte and prefix length; each distinct
//     first three bytes (a /24) become 10.0.N (N = 1, 2, ...), so addresses
//     in one /24 stay in one /24.
//   - GIDs: IPv4-mapped, link-local EUI-64 and iWARP MAC GIDs follow the
//     rules above; other non-zero GIDs become fd00::N.
//   - Host names become host-N, instance ids i-redactedN.
type Redactor struct {
	macs  map[string]net.HardwareAddr
	guids map[[8]byte][8]byte
	nets  map[[3]byte]int
	ip6   map[string]net.IP
	names map[string]string
	ids   map[string]string
	gpus  map[string]string
}

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor {
	return &Redactor{macs: map[string]net.HardwareAddr{}, guids: map[[8]byte][8]byte{}, nets: map[[3]byte]int{},
		ip6: map[string]net.IP{}, names: map[string]string{}, ids: map[string]string{}, gpus: map[string]string{}}
}

// MAC redacts a MAC; strings that are not MACs are returned unchanged.
func (r *Redactor) MAC(s string) string {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return s
	}
	return r.mac(hw).String()
}

func (r *Redactor) mac(hw net.HardwareAddr) net.HardwareAddr {
	if isZero(hw) {
		return hw
	}
	if m, ok := r.macs[string(hw)]; ok {
		return m
	}
	n := len(r.macs) + 1
	m := net.HardwareAddr{hw[0], hw[1], hw[2], byte(n >> 16), byte(n >> 8), byte(n)}
	if hw[0]&0x02 != 0 {
		// Locally administered: the first bytes are random, not a vendor.
		m[0], m[1], m[2] = 0x02, 0, 0
	}
	r.macs[string(hw)] = m
	return m
}

// GUID redacts a sysfs GUID; malformed input is returned unchanged.
func (r *Redactor) GUID(s string) string {
	g, err := gid.ParseGUID(s)
	if err != nil {
		return s
	}
	return gid.GUID(r.guid(g)).String()
}

func (r *Redactor) guid(g [8]byte) [8]byte {
	if mac, ok := gid.GUID(g).MAC(); ok {
		out, _ := gid.GUIDFromMAC(r.mac(mac))
		return out
	}
	if isZero(g[:]) {
		return g
	}
	if m, ok := r.guids[g]; ok {
		return m
	}
	n := len(r.guids) + 1
	m := [8]byte{0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	r.guids[g] = m
	return m
}

// IPv4 redacts an address or CIDR ("192.168.10.11/24"); other strings are
// returned unchanged.
func (r *Redactor) IPv4(s string) string {
	addr, prefix, hasPrefix := strings.Cut(s, "/")
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return s
	}
	out := r.ipv4(ip).String()
	if hasPrefix {
		out += "/" + prefix
	}
	return out
}

func (r *Redactor) ipv4(ip net.IP) net.IP {
	if ip.IsUnspecified() || ip.IsLoopback() {
		return ip
	}
	k := [3]byte{ip[0], ip[1], ip[2]}
	n, ok := r.nets[k]
	if !ok {
		n = len(r.nets) + 1
		r.nets[k] = n
	}
	return net.IPv4(10, byte(n>>8), byte(n), ip[3]).To4()
}

// GID redacts a sysfs GID; malformed input is returned unchanged.
func (r *Redactor) GID(s string) string {
	ip, err := parseGID(s)
	if err != nil || isZero(ip) {
		return s
	}
	switch {
	case gidIPv4(ip) != "":
		v4 := r.ipv4(ip[12:16])
		out := make(net.IP, 16)
		copy(out, ip[:12])
		copy(out[12:], v4)
		return formatGID(out)
	case ip[0] == 0xfe && ip[1] == 0x80 && isZero(ip[2:8]):
		var g [8]byte
		copy(g[:], ip[8:])
		if _, ok := gid.GUID(g).MAC(); ok {
			ng := r.guid(g)
			out := make(net.IP, 16)
			copy(out, ip[:8])
			copy(out[8:], ng[:])
			return formatGID(out)
		}
	case isZero(ip[6:]):
		out := make(net.IP, 16)
		copy(out, r.mac(net.HardwareAddr(ip[:6])))
		return formatGID(out)
	}
	if m, ok := r.ip6[string(ip)]; ok {
		return formatGID(m)
	}
	n := len(r.ip6) + 1
	m := net.IP{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	r.ip6[string(ip)] = m
	return formatGID(m)
}

// Hostname redacts a host name.
func (r *Redactor) Hostname(s string) string {
	if s == "" {
		return s
	}
	if m, ok := r.names[s]; ok {
		return m
	}
	m := fmt.Sprintf("host-%d", len(r.names)+1)
	r.names[s] = m
	return m
}

// InstanceID redacts an instance id.
func (r *Redactor) InstanceID(s string) string {
	if s == "" {
		return s
	}
	if m, ok := r.ids[s]; ok {
		return m
	}
	m := fmt.Sprintf("i-redacted%d", len(r.ids)+1)
	r.ids[s] = m
	return m
}

// gpuUUID matches NVIDIA GPU and MIG UUIDs.
var gpuUUID = regexp.MustCompile(`\b(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)

// GPUUUIDs redacts every GPU and MIG UUID in s.
func (r *Redactor) GPUUUIDs(s string) string {
	return gpuUUID.ReplaceAllStringFunc(s, func(u string) string {
		if m, ok := r.gpus[u]; ok {
			return m
		}
		m := fmt.Sprintf("%s-00000000-0000-0000-0000-%012d", u[:3], len(r.gpus)+1)
		r.gpus[u] = m
		return m
	})
}

// RedactedRegion replaces the region: it locates the host.
const RedactedRegion = "xx-redacted"

// Netdev redacts a netdev's MACs and addresses.
func (r *Redactor) Netdev(n Netdev) Netdev {
	n.MAC = r.MAC(n.MAC)
	n.PermMAC = r.MAC(n.PermMAC)
	ips := make([]string, len(n.IPv4))
	for i, ip := range n.IPv4 {
		ips[i] = r.IPv4(ip)
	}
	n.IPv4 = ips
	return n
}

// redactEntries rewrites a recording's identifying files in place, in a
// fixed order (netdevs first, then paths sorted) so that the mapping is the
// same for the same input.
func redactEntries(entries map[string]*entry, custom map[string]func(*Redactor, []byte) ([]byte, error)) error {
	r := NewRedactor()
	if e := entries[RecordedNetdevsFile]; e != nil {
		var nds []Netdev
		if err := json.Unmarshal(e.data, &nds); err != nil {
			return fmt.Errorf("redact %s: %w", RecordedNetdevsFile, err)
		}
		for i := range nds {
			nds[i] = r.Netdev(nds[i])
		}
		b, err := json.MarshalIndent(nds, "", "  ")
		if err != nil {
			return err
		}
		e.data = append(b, '\n')
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := entries[n]
		if e.kind != tar.TypeReg {
			continue
		}
		base, dir := path.Base(n), path.Base(path.Dir(n))
		line := strings.TrimSpace(string(e.data))
		if f := custom[n]; f != nil {
			b, err := f(r, e.data)
			if err != nil {
				return fmt.Errorf("redact %s: %w", n, err)
			}
			e.data = b
			continue
		}
		switch {
		case base == "node_guid" || base == "sys_image_guid":
			e.data = []byte(r.GUID(line) + "\n")
		case dir == "gids":
			e.data = []byte(r.GID(line) + "\n")
		case n == "proc/sys/kernel/hostname":
			e.data = []byte(r.Hostname(line) + "\n")
		case n == RecordedInstanceFile:
			var in Instance
			if err := json.Unmarshal(e.data, &in); err != nil {
				return fmt.Errorf("redact %s: %w", n, err)
			}
			in.ID = r.InstanceID(in.ID)
			if in.Region != "" {
				in.Region = RedactedRegion
			}
			b, err := json.MarshalIndent(in, "", "  ")
			if err != nil {
				return err
			}
			e.data = append(b, '\n')
		case strings.HasPrefix(n, "erdmakit/") && strings.HasSuffix(n, ".json"):
			// Snapshots of other sources (nvml.json): GPU UUIDs.
			e.data = []byte(r.GPUUUIDs(string(e.data)))
		}
	}
	return nil
}

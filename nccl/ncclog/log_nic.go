package ncclog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

// Per-NIC use: which NET/IB devices carried channels, with GPUDirect RDMA
// or not, and which GIDs each used; and whether NCCL saw DMA-BUF on the
// GPUs. The lines, from NCCL's sources:
//
//	src/transport/net.cc:   "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"
//	                        (the %d is the net dev; then "/GDRDMA", "(PCI)", "/Shared")
//	net_ib.cc (2.21-2.27):  "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) fifoRkey=0x%x fifoLkey=0x%x"
//	net_ib/connect.cc:      "NET/IB: %s: %s %d IbDev %d Port %d qp_num %d mtu %d GID %ld (%lX/%lX) ctsFifoRkey=..."
//	                        (the first %s is "NCCL Dev" or "NCCL MergedDev"; the GID is the index, then the
//	                        subnet prefix and interface id as little-endian 64-bit words)
//	src/init.cc:            "DMA-BUF is available on GPU device %d"

// maxNICs bounds the net dev indexes tracked; maxNICGIDs the GIDs per NIC.
const (
	maxNICs    = 64
	maxNICGIDs = 8
)

// NICUse is what the log shows of one NET/IB net device (the index NCCL
// numbers its devices by: "via NET/IB/<index>", the order of NCCL_IB_HCA).
type NICUse struct {
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"` // from "NET/IB : Using [index]name:port/link"
	// Channels counts channel connection lines via NET/IB/<index>;
	// GDRDMAChannels those with /GDRDMA.
	Channels       int `json:"channels"`
	GDRDMAChannels int `json:"gdrdma_channels"`
	// GIDs are the local GIDs its queue pairs used (at most 8 distinct).
	GIDs []NICGID `json:"gids,omitempty"`
}

// NICGID is one GID a NIC's queue pairs used.
type NICGID struct {
	Index int `json:"index"` // the GID table index
	// Address is the GID as an IPv6 address ("::ffff:192.168.10.11" for a
	// RoCE v2 IPv4 GID).
	Address string `json:"address"`
}

// nicStats accumulates per-NIC use with fixed-size tables: no allocation
// per line except for a GID not seen before.
type nicStats struct {
	channels, gdrdma [maxNICs]int
	gids             [maxNICs][]nicGID
	dmabufGPUs       []int
}

type nicGID struct {
	index       int
	prefix, iid uint64
}

var (
	bIbDev       = []byte(" IbDev ")
	bGIDWord     = []byte(" GID ")
	bDMABUFAvail = []byte("DMA-BUF is available on GPU device ")
)

// channel counts a NET/IB channel line; via is what follows "NET/", gdr
// whether it has "/GDRDMA".
func (n *nicStats) channel(via []byte, gdr bool) {
	if !hasPrefix(via, "IB/") {
		return // "via NET/IB" with no device
	}
	dev, ok := leadingInt(via[len("IB/"):])
	if !ok || dev >= maxNICs {
		return
	}
	n.channels[dev]++
	if gdr {
		n.gdrdma[dev]++
	}
}

// qp reads the NCCL Dev and GID of a "NET/IB: ... NCCL Dev d IbDev i Port p
// ... GID g (prefix/iid) ..." line.
func (n *nicStats) qp(msg []byte) {
	i := bytes.Index(msg, bIbDev)
	if i < 0 {
		return
	}
	// The word before " IbDev " is the NCCL (merged) dev.
	head := msg[:i]
	sp := bytes.LastIndexByte(head, ' ')
	dev, ok := leadingInt(head[sp+1:])
	if !ok || dev >= maxNICs {
		return
	}
	g := bytes.Index(msg[i:], bGIDWord)
	if g < 0 {
		return // an InfiniBand line: LID, no GID
	}
	rest := msg[i+g+len(bGIDWord):]
	idx, ok := leadingInt(rest)
	if !ok {
		return
	}
	open := bytes.IndexByte(rest, '(')
	cl := bytes.IndexByte(rest, ')')
	if open < 0 || cl < open {
		return
	}
	pre, iid, found := bytes.Cut(rest[open+1:cl], []byte("/"))
	if !found {
		return
	}
	p, err1 := strconv.ParseUint(string(pre), 16, 64)
	d, err2 := strconv.ParseUint(string(iid), 16, 64)
	if err1 != nil || err2 != nil {
		return
	}
	v := nicGID{index: idx, prefix: p, iid: d}
	for _, have := range n.gids[dev] {
		if have == v {
			return
		}
	}
	if len(n.gids[dev]) < maxNICGIDs {
		n.gids[dev] = append(n.gids[dev], v)
	}
}

// dmabuf records "DMA-BUF is available on GPU device N".
func (n *nicStats) dmabuf(rest []byte) {
	d, ok := leadingInt(rest)
	if !ok || len(n.dmabufGPUs) >= maxListed {
		return
	}
	for _, have := range n.dmabufGPUs {
		if have == d {
			return
		}
	}
	n.dmabufGPUs = append(n.dmabufGPUs, d)
}

// merge adds o's counts and GIDs to n (chunks of one log, in order).
func (n *nicStats) merge(o *nicStats) {
	for i := range maxNICs {
		n.channels[i] += o.channels[i]
		n.gdrdma[i] += o.gdrdma[i]
		for _, g := range o.gids[i] {
			found := false
			for _, have := range n.gids[i] {
				found = found || have == g
			}
			if !found && len(n.gids[i]) < maxNICGIDs {
				n.gids[i] = append(n.gids[i], g)
			}
		}
	}
	for _, d := range o.dmabufGPUs {
		n.dmabuf([]byte(strconv.Itoa(d)))
	}
}

// uses returns the NICs seen in channel or GID lines, by index, named
// from devs (the NET/IB Using line).
func (n *nicStats) uses(devs []IBDevice) []NICUse {
	var out []NICUse
	for i := range maxNICs {
		if n.channels[i] == 0 && len(n.gids[i]) == 0 {
			continue
		}
		u := NICUse{Index: i, Channels: n.channels[i], GDRDMAChannels: n.gdrdma[i]}
		for _, d := range devs {
			if d.Index == i {
				u.Name = d.Name
				break
			}
		}
		for _, g := range n.gids[i] {
			u.GIDs = append(u.GIDs, NICGID{Index: g.index, Address: gidAddress(g.prefix, g.iid)})
		}
		out = append(out, u)
	}
	return out
}

// gidAddress turns NCCL's two %lX words (the GID's 16 bytes read as two
// little-endian uint64 on x86 and arm64) into an IPv6 address.
func gidAddress(prefix, iid uint64) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], prefix)
	binary.LittleEndian.PutUint64(b[8:], iid)
	a := netip.AddrFrom16(b)
	if a.Is4In6() {
		return "::ffff:" + a.Unmap().String()
	}
	return a.String()
}

// NICBalance says how NCCL spread its network channels over the NET/IB
// devices it listed.
type NICBalance string

const (
	// NICsOne: one NET/IB device listed, so nothing to spread.
	NICsOne NICBalance = "one"
	// NICsBalanced: every listed device carried channels, the least at
	// least half the most.
	NICsBalanced NICBalance = "balanced"
	// NICsUnbalanced: every listed device carried channels, unevenly.
	NICsUnbalanced NICBalance = "unbalanced"
	// NICsFirstOnly: two or more devices listed, some carried none (NCCL
	// puts every GPU on the first NIC at equal distance).
	NICsFirstOnly NICBalance = "unused-nics"
	// NICsUnknown: no NET/IB channel lines to count.
	NICsUnknown NICBalance = "unknown"
)

// NICBalance decides whether the NET/IB devices NCCL listed all carried
// traffic, from the per-device channel counts.
func (l *Summary) NICBalance() NICBalance {
	if l == nil || len(l.NICs) == 0 {
		return NICsUnknown
	}
	listed := map[int]bool{}
	for _, d := range l.IBDevices {
		listed[d.Index] = true
	}
	for _, u := range l.NICs {
		listed[u.Index] = true
	}
	used, lo, hi := 0, 0, 0
	for i := range listed {
		c := 0
		for _, u := range l.NICs {
			if u.Index == i {
				c = u.Channels
			}
		}
		if c > 0 {
			used++
			if lo == 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
	}
	switch {
	case used == 0:
		return NICsUnknown
	case len(listed) == 1:
		return NICsOne
	case used < len(listed):
		return NICsFirstOnly
	case 2*lo < hi:
		return NICsUnbalanced
	}
	return NICsBalanced
}

// nicText is "erdma_0 (NET/IB/0): 16 channels, 16 GDRDMA, GID 1 ::ffff:192.168.10.11".
func (u NICUse) text() string {
	name := u.Name
	if name == "" {
		name = "net dev"
	}
	s := fmt.Sprintf("%s (NET/IB/%d): %d channel connections, %d GDRDMA", name, u.Index, u.Channels, u.GDRDMAChannels)
	for _, g := range u.GIDs {
		s += fmt.Sprintf(", GID %d %s", g.Index, g.Address)
	}
	return s
}

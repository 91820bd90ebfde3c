package ibverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/gid"
)

// ErrNotSupported is returned by every call in a build without cgo or off Linux.
var ErrNotSupported = errors.New("ibverbs: not supported in this build (needs linux and cgo)")

// ErrNotInstalled is returned when libibverbs.so.1 cannot be loaded. Its
// message names the packages of both distribution families.
var ErrNotInstalled = errors.New("libibverbs is not installed: apt-get install libibverbs1 ibverbs-providers rdma-core (Debian, Ubuntu), dnf or yum install rdma-core libibverbs (Alibaba Cloud Linux, RHEL, CentOS)")

// ErrRDMACMNotInstalled is returned by the rdma_cm calls when librdmacm.so.1
// cannot be loaded (the verbs calls still work).
var ErrRDMACMNotInstalled = errors.New("librdmacm is not installed: apt-get install librdmacm1 rdma-core (Debian, Ubuntu), dnf or yum install rdma-core librdmacm (Alibaba Cloud Linux, RHEL, CentOS)")

// ErrNoDevice is wrapped by Open when no device has the given name.
var ErrNoDevice = errors.New("no such RDMA device")

// ErrClosed is returned by methods of a closed resource.
var ErrClosed = errors.New("ibverbs: resource is closed")

// Error is a failed verb: which call, on which device, the errno taken from
// that same call, and a hint where the cause is known. errors.Is(err,
// syscall.ENOMEM) and the like work through Unwrap.
type Error struct {
	Verb   string        // "ibv_create_qp"
	Device string        // "rxe0"
	Errno  syscall.Errno // from the failing call
	Hint   string        // "memlock limit too low: ulimit -l unlimited"; may be ""
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Verb)
	if e.Device != "" {
		b.WriteString(" on ")
		b.WriteString(e.Device)
	}
	b.WriteString(": ")
	if e.Errno != 0 {
		b.WriteString(e.Errno.Error())
		fmt.Fprintf(&b, " (errno %d)", int(e.Errno))
	} else {
		b.WriteString("failed")
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the errno, so errors.Is(err, syscall.EBUSY) works.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// hintFor returns the known cause of errno from verb, "" if none is known.
func hintFor(verb string, errno syscall.Errno, t Transport) string {
	switch {
	case errno == syscall.ENOMEM && (verb == "ibv_create_qp" || verb == "ibv_reg_mr" || verb == "ibv_create_cq" || verb == "rdma_create_qp"):
		return "memlock limit too low: ulimit -l unlimited"
	case errno == syscall.EINVAL && t == TransportIWARP && (verb == "ibv_modify_qp(RTR)" || verb == "ibv_modify_qp(RTS)"):
		return "iWARP device: connect with rdma_cm"
	case errno == syscall.EINVAL && verb == "ibv_modify_qp(RTR)":
		return "check the remote endpoint (QPN, GID) and the local GID index"
	case errno == syscall.ETIMEDOUT && strings.HasPrefix(verb, "rdma_"):
		return "peer did not answer: check its address, that it listens, and routes"
	case errno == syscall.ECONNREFUSED:
		return "nobody listens at that address and port"
	case verb == "rdma_create_event_channel" && (errno == syscall.ENODEV || errno == syscall.ENOENT):
		return "no /dev/infiniband/rdma_cm: modprobe rdma_ucm"
	case errno == syscall.EBUSY:
		return "close its children first"
	}
	return ""
}

// WCError is a work completion that did not succeed.
type WCError struct {
	Status    WCStatus
	StatusStr string // ibv_wc_status_str: "transport retry counter exceeded"
	WRID      uint64
	QPN       uint32
	VendorErr uint32
}

func (e *WCError) Error() string {
	return fmt.Sprintf("work completion wr_id %d on qp %d: %s (%s, vendor_err 0x%x)",
		e.WRID, e.QPN, e.StatusStr, e.Status, e.VendorErr)
}

// Transport is a device's transport type (ibv_device.transport_type).
type Transport int

// Transport types, numbered as enum ibv_transport_type.
const (
	TransportUnknown     Transport = -1
	TransportIB          Transport = 0 // InfiniBand, RoCE, and eRDMA in compat mode
	TransportIWARP       Transport = 1 // iWARP: connect with rdma_cm
	TransportUSNIC       Transport = 2
	TransportUSNICUDP    Transport = 3
	TransportUnspecified Transport = 4
)

func (t Transport) String() string {
	switch t {
	case TransportIB:
		return "InfiniBand"
	case TransportIWARP:
		return "iWARP"
	case TransportUSNIC:
		return "usNIC"
	case TransportUSNICUDP:
		return "usNIC UDP"
	case TransportUnspecified:
		return "unspecified"
	}
	return fmt.Sprintf("unknown transport %d", int(t))
}

// NodeType is ibv_device.node_type.
type NodeType int

// Node types, numbered as enum ibv_node_type.
const (
	NodeUnknown     NodeType = -1
	NodeCA          NodeType = 1
	NodeSwitch      NodeType = 2
	NodeRouter      NodeType = 3
	NodeRNIC        NodeType = 4
	NodeUSNIC       NodeType = 5
	NodeUSNICUDP    NodeType = 6
	NodeUnspecified NodeType = 7
)

func (n NodeType) String() string {
	switch n {
	case NodeCA:
		return "CA"
	case NodeSwitch:
		return "switch"
	case NodeRouter:
		return "router"
	case NodeRNIC:
		return "RNIC"
	case NodeUSNIC:
		return "usNIC"
	case NodeUSNICUDP:
		return "usNIC UDP"
	case NodeUnspecified:
		return "unspecified"
	}
	return fmt.Sprintf("unknown node type %d", int(n))
}

// GUID is a 64-bit EUI in host order, printed as ibv_devinfo does:
// "0216:3eff:fe2f:3775".
type GUID uint64

func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", uint16(g>>48), uint16(g>>32), uint16(g>>16), uint16(g))
}

// ParseGUID reads "0216:3eff:fe2f:3775" (the sysfs and ibv_devinfo form)
// with gid.ParseGUID, the one GUID parser.
func ParseGUID(s string) (GUID, error) {
	g, err := gid.ParseGUID(s)
	if err != nil {
		return 0, err
	}
	return GUID(binary.BigEndian.Uint64(g[:])), nil
}

// GIDType is the type of a GID table entry (enum ibv_gid_type).
type GIDType int

// GID types.
const (
	GIDTypeIB     GIDType = 0 // IB, or RoCE v1 (sysfs says "IB/RoCE v1")
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("unknown gid type %d", int(t))
}

// GIDEntry is one populated entry of a port's GID table.
type GIDEntry struct {
	Index       int
	GID         gid.GID
	Type        GIDType
	NetdevIndex int // ifindex of the netdev the entry belongs to; 0 if none or unknown
}

// DeviceInfo is one entry of ibv_get_device_list.
type DeviceInfo struct {
	Name      string
	GUID      GUID // node GUID
	NodeType  NodeType
	Transport Transport
}

// DeviceAttr is struct ibv_device_attr (ibv_query_device).
type DeviceAttr struct {
	FWVer                 string
	NodeGUID              GUID
	SysImageGUID          GUID
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 int
	MaxQPWR               int
	DeviceCapFlags        uint32
	MaxSGE                int
	MaxSGERD              int
	MaxCQ                 int
	MaxCQE                int
	MaxMR                 int
	MaxPD                 int
	MaxQPRdAtom           int
	MaxEECRdAtom          int
	MaxResRdAtom          int
	MaxQPInitRdAtom       int
	MaxEEInitRdAtom       int
	AtomicCap             int
	MaxEE                 int
	MaxRDD                int
	MaxMW                 int
	MaxRawIPv6QP          int
	MaxRawEthyQP          int
	MaxMcastGrp           int
	MaxMcastQPAttach      int
	MaxTotalMcastQPAttach int
	MaxAH                 int
	MaxFMR                int
	MaxMapPerFMR          int
	MaxSRQ                int
	MaxSRQWR              int
	MaxSRQSGE             int
	MaxPKeys              int
	LocalCACKDelay        int
	PhysPortCnt           int
}

// PortState is enum ibv_port_state.
type PortState int

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

func (s PortState) String() string {
	switch s {
	case PortNop:
		return "PORT_NOP"
	case PortDown:
		return "PORT_DOWN"
	case PortInit:
		return "PORT_INIT"
	case PortArmed:
		return "PORT_ARMED"
	case PortActive:
		return "PORT_ACTIVE"
	case PortActiveDefer:
		return "PORT_ACTIVE_DEFER"
	}
	return fmt.Sprintf("invalid state %d", int(s))
}

// MTU is enum ibv_mtu: 1 = 256 bytes ... 5 = 4096 bytes.
type MTU int

// MTU values.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes is the MTU in bytes, 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << int(m)
}

// String prints the MTU as ibv_devinfo does: "4096 (5)".
func (m MTU) String() string {
	return fmt.Sprintf("%d (%d)", m.Bytes(), int(m))
}

// LinkLayer is a port's link layer (IBV_LINK_LAYER_*).
type LinkLayer int

// Link layers.
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

func (l LinkLayer) String() string {
	switch l {
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// PortAttr is struct ibv_port_attr (ibv_query_port).
type PortAttr struct {
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTblLen     int
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTblLen    int
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8 // 1=1X 2=4X 4=8X 8=12X 16=2X
	ActiveSpeed   uint8 // 1=2.5 2=5 4=10 8=10 16=14 32=25 64=50 128=100 Gbps per lane
	PhysState     uint8 // 5 = LinkUp
	LinkLayer     LinkLayer
	Flags         uint8
}

// Access is a set of memory-region access flags (enum ibv_access_flags).
type Access int

// Access flags.
const (
	AccessLocalWrite   Access = 1
	AccessRemoteWrite  Access = 2
	AccessRemoteRead   Access = 4
	AccessRemoteAtomic Access = 8
)

// WCStatus is enum ibv_wc_status.
type WCStatus uint32

// A few work completion statuses; the rest print by number.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
)

var wcStatusNames = [...]string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
	"IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
}

// String is the enum's C name ("IBV_WC_RETRY_EXC_ERR"); the library's
// sentence for it is in WCError.StatusStr.
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("IBV_WC_STATUS_%d", uint32(s))
}

// WCOpcode is enum ibv_wc_opcode.
type WCOpcode uint32

// Work completion opcodes.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

// WC is one work completion, copied out of struct ibv_wc by CQ.Poll. Its
// layout is fixed (the C side writes it directly): do not reorder.
type WC struct {
	WRID      uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	QPN       uint32
	SrcQP     uint32
	ImmData   uint32
	Flags     uint32
}

// QPConfig sizes and tunes an RC queue pair. Zero values take the defaults
// named on each field.
type QPConfig struct {
	RecvCQ        *CQ // defaults to the send CQ given to CreateQP
	MaxSendWR     int // default 128; also the longest list PostWrites takes
	MaxRecvWR     int // default 16
	MaxSendSGE    int // default 1
	MaxRecvSGE    int // default 1
	MaxInlineData int // default 0
	// OldPostSend posts writes with ibv_post_send even where the provider
	// has the work request API (ibv_wr_*, the QP then made with
	// ibv_create_qp_ex), as perftest's --use_old_post_send; QP.WRAPI tells
	// which a QP got. eRDMA's provider has only ibv_post_send.
	OldPostSend bool

	Port int // default 1
	// GIDIndex is used when GIDIndexSet is true; otherwise the QP picks the
	// RoCE v2 entry holding an IPv4-mapped address, else the first populated
	// RoCE v2 entry, else index 0 (what NCCL and the eRDMA guide do).
	GIDIndex    int
	GIDIndexSet bool
	PSN         uint32 // initial send PSN (24 bits); default derived from the QPN

	// Connect tuning (RTR/RTS). Timeout is the ACK timeout exponent
	// (4.096 us * 2^Timeout; default 14, about 67 ms); RetryCnt (used when
	// RetryCntSet) and RNRRetry default to 7. Small values (Timeout 8,
	// RetryCnt 1) make an unreachable peer fail fast with
	// IBV_WC_RETRY_EXC_ERR.
	Timeout     uint8
	RetryCnt    uint8
	RetryCntSet bool
	RNRRetry    uint8
	MinRNRTimer uint8  // default 12 (0.64 ms)
	MaxRdAtomic uint8  // default 1 (RDMA READ/atomic depth, both directions)
	Access      Access // remote access allowed on this QP; default local write|remote write|remote read
}

// Endpoint is what the two sides of an RC connection exchange out of band
// (or in rdma_cm private data): the queue pair's address and, for RDMA, the
// remote buffer the peer may write.
type Endpoint struct {
	QPN  uint32
	PSN  uint32
	GID  gid.GID
	LID  uint16
	MTU  MTU    // the sender's active MTU; Connect uses the smaller of both
	Addr uint64 // remote buffer address for RDMA, 0 if none
	RKey uint32
	Len  uint64 // remote buffer length
}

// EndpointSize is the length of Endpoint's binary encoding; it fits in
// rdma_cm's smallest private data (56 bytes on IB/RoCE connect).
const EndpointSize = 52

const endpointMagic = 0xE7

// MarshalBinary encodes the endpoint in EndpointSize bytes (big endian,
// version byte first).
func (e Endpoint) MarshalBinary() ([]byte, error) {
	b := make([]byte, EndpointSize)
	e.put(b)
	return b, nil
}

func (e Endpoint) put(b []byte) {
	b[0] = endpointMagic
	b[1] = 1 // version
	b[2] = byte(e.MTU)
	b[3] = 0
	binary.BigEndian.PutUint32(b[4:], e.QPN)
	binary.BigEndian.PutUint32(b[8:], e.PSN)
	copy(b[12:28], e.GID[:])
	binary.BigEndian.PutUint16(b[28:], e.LID)
	binary.BigEndian.PutUint16(b[30:], 0)
	binary.BigEndian.PutUint64(b[32:], e.Addr)
	binary.BigEndian.PutUint32(b[40:], e.RKey)
	binary.BigEndian.PutUint64(b[44:], e.Len)
}

// UnmarshalBinary decodes what MarshalBinary wrote; trailing bytes (rdma_cm
// pads private data) are ignored.
func (e *Endpoint) UnmarshalBinary(b []byte) error {
	if len(b) < EndpointSize {
		return fmt.Errorf("endpoint: %d bytes, want at least %d", len(b), EndpointSize)
	}
	if b[0] != endpointMagic {
		return fmt.Errorf("endpoint: bad magic 0x%02x (not an erdmakit endpoint)", b[0])
	}
	if b[1] != 1 {
		return fmt.Errorf("endpoint: unsupported version %d", b[1])
	}
	m := MTU(b[2])
	if m.Bytes() == 0 {
		return fmt.Errorf("endpoint: invalid MTU enum %d", b[2])
	}
	qpn := binary.BigEndian.Uint32(b[4:])
	if qpn > 0xffffff {
		return fmt.Errorf("endpoint: QPN 0x%x exceeds 24 bits", qpn)
	}
	psn := binary.BigEndian.Uint32(b[8:])
	if psn > 0xffffff {
		return fmt.Errorf("endpoint: PSN 0x%x exceeds 24 bits", psn)
	}
	*e = Endpoint{
		QPN:  qpn,
		PSN:  psn,
		LID:  binary.BigEndian.Uint16(b[28:]),
		MTU:  m,
		Addr: binary.BigEndian.Uint64(b[32:]),
		RKey: binary.BigEndian.Uint32(b[40:]),
		Len:  binary.BigEndian.Uint64(b[44:]),
	}
	copy(e.GID[:], b[12:28])
	return nil
}

// Writes describes one list of RDMA WRITEs for QP.PostWrites: Count writes
// of Size bytes from MR at Offset to RemoteAddr (all to the same place, as
// perftest does), chained in one ibv_post_send. WR i gets wr_id WRID+i; every
// SignalEvery-th WR and the last one are signalled, so one call produces
// ceil(Count/SignalEvery) completions.
type Writes struct {
	MR          *MR
	Offset      uint64
	RemoteAddr  uint64
	RKey        uint32
	Size        uint32
	Count       int
	SignalEvery int // default 1 (every WR signalled)
	WRID        uint64
	Inline      bool // IBV_SEND_INLINE; Size must be <= QPConfig.MaxInlineData
}

// Signalled is how many completions PostWrites produces for w.
func (w Writes) Signalled() int {
	every := w.SignalEvery
	if every <= 0 {
		every = 1
	}
	return (w.Count + every - 1) / every
}

// CMConfig tunes the rdma_cm path.
type CMConfig struct {
	// Timeout bounds address and route resolution and each wait for an
	// event when the context has no deadline; default 5s.
	Timeout time.Duration
	// Backlog of a listener; default 16.
	Backlog int
	// RetryCount and RNRRetryCount go to rdma_conn_param; default 7.
	RetryCount    uint8
	RNRRetryCount uint8
}

// MethodFor is the connect method for a device of transport t, by
// connect.Method.Resolve's rule: rdma_cm for iWARP (where modify_qp to
// RTR/RTS fails), out of band for the rest.
func MethodFor(t Transport) connect.Method {
	ct := connect.UnknownTransport
	if t == TransportIWARP {
		ct = connect.IWARP
	}
	return connect.Auto.Resolve(ct)
}

// WithMR returns e with Addr, RKey and Len describing mr, the buffer the
// peer may write.
func (e Endpoint) WithMR(mr *MR) Endpoint {
	e.Addr, e.RKey, e.Len = mr.Addr(), mr.RKey(), uint64(mr.Len())
	return e
}

// StreamConfig is a write stream (NewWriteStream): RDMA WRITEs from one MR
// on connected RC QPs that share one CQ, or each from its own MR with its
// own CQ (QPs of rdma_cm connections), posted and polled in C.
type StreamConfig struct {
	CQ     *CQ   // the QPs' send CQ, shared by all of them
	QPs    []*QP // connected (RTS)
	MR     *MR   // every write reads Size bytes at its start
	Remote []RemoteBuffer
	// CQs and MRs, in place of CQ and MR, are each QP's own send CQ and
	// source MR (by QP index; QPs may share them). Every CQ is polled at
	// every turn of the loop.
	CQs  []*CQ
	MRs  []*MR
	Size uint32
	// Depth is the send-queue slots each QP keeps in use (at most its
	// MaxSendWR).
	Depth int
	// PostList posts lists of this many writes; 0 posts every free slot as
	// one list once LowWater slots are free.
	PostList, LowWater int
	// SignalEvery signals one write in SignalEvery, and the last of a list.
	SignalEvery int
	Inline      bool
	// Iterations is the writes to post per QP; 0 posts until StopPosting.
	Iterations int
	// PeakWindow is the window of the peak rate (StartPeak); Slack is how
	// long a poll may take for its count and time to close a window.
	PeakWindow, Slack time.Duration
}

// RemoteBuffer is where a QP's writes land: the peer's buffer address and rkey.
type RemoteBuffer struct {
	Addr uint64
	RKey uint32
}

// RunState says why WriteStream.Run returned.
type RunState int

const (
	RunDeadline RunState = iota // the time asked for has passed
	RunDone                     // Iterations mode: every write posted and completed
	RunDrained                  // after StopPosting: nothing in flight
	RunStopped                  // Stop was called
	// RunStalled (PingPong): a wait for the peer's write or for a
	// completion took longer than PingConfig.Stall.
	RunStalled
)

func (s RunState) String() string {
	switch s {
	case RunDeadline:
		return "deadline"
	case RunDone:
		return "done"
	case RunDrained:
		return "drained"
	case RunStopped:
		return "stopped"
	case RunStalled:
		return "stalled"
	}
	return fmt.Sprintf("RunState(%d)", int(s))
}

// StreamStatus is a write stream's counts after a Run, cumulative since the
// stream was made.
type StreamStatus struct {
	State     RunState
	Posted    uint64 // writes posted
	Completed uint64 // writes completed
	InFlight  int
	// PollTime is how long the run's last poll (every ready completion)
	// took: a count paired with the time after it is exact when this is
	// short.
	PollTime time.Duration
	// PeakPerSec is the best PeakWindow's writes per second since StartPeak.
	PeakPerSec float64
	// Posts, Polls and Yields count ibv_post_send and ibv_poll_cq calls and
	// sched_yield after empty polls.
	Posts, Polls, Yields uint64
}

// PingConfig is one side of ib_write_lat's RDMA WRITE ping-pong
// (NewPingPong) on one connected RC QP: each round trip writes Size bytes
// from the MR at Send to Remote, whose last byte carries the round's
// number (round k, from 1, writes byte k mod 256), and waits until the
// peer's write of the same number has landed in the last byte of the MR's
// Size bytes at Recv. One write is outstanding at a time, signalled, and
// its completion is reaped before the next post.
type PingConfig struct {
	CQ     *CQ // the QP's send CQ
	QP     *QP // connected (RTS)
	MR     *MR // holds both areas; the byte at Recv+Size-1 must start at 0
	Remote RemoteBuffer
	Size   uint32
	// Send and Recv are offsets in MR: where this side's writes are sent
	// from and where the peer's land. The areas should not share a cache
	// line.
	Send, Recv uint64
	Inline     bool
	// Answer is the server's side: wait for each of the peer's writes, then
	// write back. Otherwise this side writes first and times each round
	// trip, from one post's return to the next's (ib_write_lat times from
	// one post's start to the next's: the same period).
	Answer bool
	// Stall bounds any one wait (for the peer's write, for a completion):
	// a longer one ends the run with RunStalled. Default 10 s.
	Stall time.Duration
	// YieldAfter: a wait longer than this yields the CPU (sched_yield)
	// every 256 polls, so that where there are fewer CPUs than spinners
	// (both ends on one CPU; software RDMA, whose work runs in kernel
	// threads) the peer runs at once. 0: the default, 50 µs (a healthy
	// eRDMA round trip never waits that long); < 0: never.
	YieldAfter time.Duration
}

// DefaultPingYieldAfter is PingConfig.YieldAfter's default.
const DefaultPingYieldAfter = 50 * time.Microsecond

// PingStatus is a ping-pong's state after a Run.
type PingStatus struct {
	// State is RunDone (the round trips asked for were made), RunDeadline,
	// RunStopped or RunStalled.
	State RunState
	// Rounds is the round trips made since NewPingPong.
	Rounds uint64
	// Last is the writing side's last round trip.
	Last time.Duration
	// WaitingForCompletion: the wait that stalled was for the completion of
	// this side's write, not for the peer's write (RunStalled).
	WaitingForCompletion bool
	// Yields counts the sched_yield calls of long waits.
	Yields uint64
}

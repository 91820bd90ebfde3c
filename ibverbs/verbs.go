//go:build linux && cgo

package ibverbs

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl
#include <errno.h>
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"github.com/erdmakit/erdmakit/gid"
)

// The C work completion and the Go WC share one layout.
var _ [unsafe.Sizeof(WC{}) - unsafe.Sizeof(C.ek_wc{})]struct{}
var _ [unsafe.Sizeof(C.ek_wc{}) - unsafe.Sizeof(WC{})]struct{}

const (
	defaultVerbs  = "libibverbs.so.1"
	defaultRDMACM = "librdmacm.so.1"
	maxDevices    = 256
)

// Loader names the shared libraries to dlopen; empty names mean
// libibverbs.so.1 and librdmacm.so.1. Tests point it at a missing name to
// see ErrNotInstalled.
type Loader struct {
	Verbs  string
	RDMACM string
}

// Lib is a loaded libibverbs (and, if present, librdmacm). It is never
// unloaded: the process keeps it until exit.
type Lib struct {
	p     *C.ek_lib
	cmErr error // nil when librdmacm is usable
}

// Load opens the libraries. A missing libibverbs is ErrNotInstalled (wrapped
// with the loader's message); a missing librdmacm only disables the rdma_cm
// calls, which then return ErrRDMACMNotInstalled.
func (l Loader) Load() (*Lib, error) {
	verbs, cm := l.Verbs, l.RDMACM
	if verbs == "" {
		verbs = defaultVerbs
	}
	if cm == "" {
		cm = defaultRDMACM
	}
	cv, ccm := C.CString(verbs), C.CString(cm)
	defer C.free(unsafe.Pointer(cv))
	defer C.free(unsafe.Pointer(ccm))
	var buf [512]C.char
	var p *C.ek_lib
	switch C.ek_load(cv, ccm, &p, &buf[0], C.int(len(buf))) {
	case C.EK_LOAD_OK:
	case C.EK_LOAD_NOLIB:
		return nil, fmt.Errorf("%w (dlopen %s: %s)", ErrNotInstalled, verbs, C.GoString(&buf[0]))
	default:
		return nil, fmt.Errorf("%w (%s: too old or not libibverbs)", ErrNotInstalled, C.GoString(&buf[0]))
	}
	lib := &Lib{p: p}
	if C.ek_cm_loaded(p, &buf[0], C.int(len(buf))) == 0 {
		lib.cmErr = fmt.Errorf("%w (dlopen %s: %s)", ErrRDMACMNotInstalled, cm, C.GoString(&buf[0]))
	}
	return lib, nil
}

var defaultLib = sync.OnceValues(func() (*Lib, error) { return Loader{}.Load() })

// DefaultLib is Loader{}.Load(), done once per process.
func DefaultLib() (*Lib, error) { return defaultLib() }

// Devices lists the RDMA devices (ibv_get_device_list) with the default Lib.
func Devices() ([]DeviceInfo, error) {
	lib, err := DefaultLib()
	if err != nil {
		return nil, err
	}
	return lib.Devices()
}

// Open opens the named device with the default Lib.
func Open(name string) (*Context, error) {
	lib, err := DefaultLib()
	if err != nil {
		return nil, err
	}
	return lib.Open(name)
}

func devInfo(d *C.ek_devinfo) DeviceInfo {
	return DeviceInfo{
		Name:      C.GoString(&d.name[0]),
		GUID:      GUID(d.guid),
		NodeType:  NodeType(d.node_type),
		Transport: Transport(d.transport),
	}
}

// Devices lists the RDMA devices (ibv_get_device_list). No device is an
// empty list, not an error.
func (lib *Lib) Devices() ([]DeviceInfo, error) {
	infos := (*[maxDevices]C.ek_devinfo)(C.calloc(maxDevices, C.size_t(unsafe.Sizeof(C.ek_devinfo{}))))
	if infos == nil {
		return nil, &Error{Verb: "ibv_get_device_list", Errno: syscall.ENOMEM}
	}
	defer C.free(unsafe.Pointer(infos))
	var n C.int
	if rc := C.ek_devices(lib.p, &infos[0], maxDevices, &n); rc != 0 {
		errno := syscall.Errno(rc)
		return nil, &Error{Verb: "ibv_get_device_list", Errno: errno}
	}
	out := make([]DeviceInfo, 0, int(n))
	for i := 0; i < int(n) && i < maxDevices; i++ {
		out = append(out, devInfo(&infos[i]))
	}
	return out, nil
}

// Open opens the named device (ibv_open_device). An unknown name is an error
// wrapping ErrNoDevice that lists the devices present.
func (lib *Lib) Open(name string) (*Context, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var info C.ek_devinfo
	var ctx *C.struct_ibv_context
	rc := C.ek_open(lib.p, cname, &ctx, &info)
	if rc == C.ENODEV {
		devs, err := lib.Devices()
		names := make([]string, 0, len(devs))
		for _, d := range devs {
			names = append(names, d.Name)
		}
		have := fmt.Sprint(names)
		if err != nil {
			have = err.Error()
		} else if len(names) == 0 {
			have = "none (is ib_uverbs loaded and an RDMA device present?)"
		}
		return nil, fmt.Errorf("open %q: %w; devices present: %s", name, ErrNoDevice, have)
	}
	if rc != 0 {
		errno := syscall.Errno(rc)
		return nil, &Error{Verb: "ibv_open_device", Device: name, Errno: errno, Hint: hintFor("ibv_open_device", errno, TransportUnknown)}
	}
	return &Context{lib: lib, ctx: ctx, info: devInfo(&info), owned: true}, nil
}

// node tracks a resource's live children so that Close refuses (EBUSY)
// rather than free what others still use. Close is idempotent.
type node struct {
	mu      sync.Mutex
	closed  bool
	kids    int
	parents []*node
}

func (n *node) adopt(parents ...*node) error {
	for i, p := range parents {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			for _, q := range parents[:i] {
				q.release()
			}
			return ErrClosed
		}
		p.kids++
		p.mu.Unlock()
	}
	n.parents = parents
	return nil
}

func (n *node) release() {
	n.mu.Lock()
	n.kids--
	n.mu.Unlock()
}

// close runs free once, if no child is alive; busy builds the EBUSY error.
func (n *node) close(free func() error, busy func(kids int) error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	if n.kids > 0 {
		return busy(n.kids)
	}
	if err := free(); err != nil {
		return err
	}
	n.closed = true
	for _, p := range n.parents {
		p.release()
	}
	return nil
}

func (n *node) alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.closed
}

// Context is an opened device (struct ibv_context).
type Context struct {
	node
	lib   *Lib
	ctx   *C.struct_ibv_context
	info  DeviceInfo
	owned bool // false for the context librdmacm opened for a CMConn
}

func (c *Context) fail(verb string, rc C.int) error {
	errno := syscall.Errno(rc)
	return &Error{Verb: verb, Device: c.info.Name, Errno: errno, Hint: hintFor(verb, errno, c.info.Transport)}
}

func (c *Context) busy(verb string) func(int) error {
	return func(kids int) error {
		return &Error{Verb: verb, Device: c.info.Name, Errno: syscall.EBUSY,
			Hint: fmt.Sprintf("%d live resources depend on it: close them first", kids)}
	}
}

// Name is the device name ("rxe0", "erdma_0").
func (c *Context) Name() string { return c.info.Name }

// Info is the device's list entry.
func (c *Context) Info() DeviceInfo { return c.info }

// Transport is the device's transport type.
func (c *Context) Transport() Transport { return c.info.Transport }

// Close closes the device; EBUSY while PDs or CQs are open.
func (c *Context) Close() error {
	return c.close(func() error {
		if !c.owned {
			return nil
		}
		if rc := C.ek_close_device(c.lib.p, c.ctx); rc != 0 {
			return c.fail("ibv_close_device", rc)
		}
		return nil
	}, c.busy("ibv_close_device"))
}

// QueryDevice is ibv_query_device.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if !c.alive() {
		return DeviceAttr{}, ErrClosed
	}
	var a C.struct_ibv_device_attr
	if rc := C.ek_query_device(c.lib.p, c.ctx, &a); rc != 0 {
		return DeviceAttr{}, c.fail("ibv_query_device", rc)
	}
	return DeviceAttr{
		FWVer:                 C.GoString(&a.fw_ver[0]),
		NodeGUID:              GUID(be64(uint64(a.node_guid))),
		SysImageGUID:          GUID(be64(uint64(a.sys_image_guid))),
		MaxMRSize:             uint64(a.max_mr_size),
		PageSizeCap:           uint64(a.page_size_cap),
		VendorID:              uint32(a.vendor_id),
		VendorPartID:          uint32(a.vendor_part_id),
		HWVer:                 uint32(a.hw_ver),
		MaxQP:                 int(a.max_qp),
		MaxQPWR:               int(a.max_qp_wr),
		DeviceCapFlags:        uint32(a.device_cap_flags),
		MaxSGE:                int(a.max_sge),
		MaxSGERD:              int(a.max_sge_rd),
		MaxCQ:                 int(a.max_cq),
		MaxCQE:                int(a.max_cqe),
		MaxMR:                 int(a.max_mr),
		MaxPD:                 int(a.max_pd),
		MaxQPRdAtom:           int(a.max_qp_rd_atom),
		MaxEECRdAtom:          int(a.max_ee_rd_atom),
		MaxResRdAtom:          int(a.max_res_rd_atom),
		MaxQPInitRdAtom:       int(a.max_qp_init_rd_atom),
		MaxEEInitRdAtom:       int(a.max_ee_init_rd_atom),
		AtomicCap:             int(a.atomic_cap),
		MaxEE:                 int(a.max_ee),
		MaxRDD:                int(a.max_rdd),
		MaxMW:                 int(a.max_mw),
		MaxRawIPv6QP:          int(a.max_raw_ipv6_qp),
		MaxRawEthyQP:          int(a.max_raw_ethy_qp),
		MaxMcastGrp:           int(a.max_mcast_grp),
		MaxMcastQPAttach:      int(a.max_mcast_qp_attach),
		MaxTotalMcastQPAttach: int(a.max_total_mcast_qp_attach),
		MaxAH:                 int(a.max_ah),
		MaxFMR:                int(a.max_fmr),
		MaxMapPerFMR:          int(a.max_map_per_fmr),
		MaxSRQ:                int(a.max_srq),
		MaxSRQWR:              int(a.max_srq_wr),
		MaxSRQSGE:             int(a.max_srq_sge),
		MaxPKeys:              int(a.max_pkeys),
		LocalCACKDelay:        int(a.local_ca_ack_delay),
		PhysPortCnt:           int(a.phys_port_cnt),
	}, nil
}

// be64 converts a big-endian value as loaded on this (little-endian or
// big-endian) machine to host order.
func be64(v uint64) uint64 {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// QueryPort is ibv_query_port (ports are numbered from 1).
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if !c.alive() {
		return PortAttr{}, ErrClosed
	}
	if port < 1 || port > 255 {
		return PortAttr{}, &Error{Verb: "ibv_query_port", Device: c.info.Name, Errno: syscall.EINVAL,
			Hint: fmt.Sprintf("port %d: ports are numbered from 1", port)}
	}
	var a C.struct_ibv_port_attr
	if rc := C.ek_query_port(c.lib.p, c.ctx, C.int(port), &a); rc != 0 {
		e := c.fail("ibv_query_port", rc).(*Error)
		e.Hint = fmt.Sprintf("port %d does not exist on %s", port, c.info.Name)
		return PortAttr{}, e
	}
	return PortAttr{
		State:         PortState(a.state),
		MaxMTU:        MTU(a.max_mtu),
		ActiveMTU:     MTU(a.active_mtu),
		GIDTblLen:     int(a.gid_tbl_len),
		PortCapFlags:  uint32(a.port_cap_flags),
		MaxMsgSz:      uint32(a.max_msg_sz),
		BadPKeyCntr:   uint32(a.bad_pkey_cntr),
		QKeyViolCntr:  uint32(a.qkey_viol_cntr),
		PKeyTblLen:    int(a.pkey_tbl_len),
		LID:           uint16(a.lid),
		SMLID:         uint16(a.sm_lid),
		LMC:           uint8(a.lmc),
		MaxVLNum:      uint8(a.max_vl_num),
		SMSL:          uint8(a.sm_sl),
		SubnetTimeout: uint8(a.subnet_timeout),
		InitTypeReply: uint8(a.init_type_reply),
		ActiveWidth:   uint8(a.active_width),
		ActiveSpeed:   uint8(a.active_speed),
		PhysState:     uint8(a.phys_state),
		LinkLayer:     LinkLayer(a.link_layer),
		Flags:         uint8(a.flags),
	}, nil
}

// QueryGID is one GID table entry with its type (ibv_query_gid_ex; sysfs
// gid_attrs where libibverbs is older). An unpopulated entry or an index
// beyond the table is an error.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	if !c.alive() {
		return GIDEntry{}, ErrClosed
	}
	e, ok, err := c.queryGID(port, index)
	if err != nil {
		return GIDEntry{}, err
	}
	if !ok {
		return GIDEntry{}, &Error{Verb: "ibv_query_gid_ex", Device: c.info.Name, Errno: syscall.ENODATA,
			Hint: fmt.Sprintf("GID index %d of port %d is not populated", index, port)}
	}
	return e, nil
}

func (c *Context) queryGID(port, index int) (GIDEntry, bool, error) {
	if index < 0 {
		return GIDEntry{}, false, &Error{Verb: "ibv_query_gid_ex", Device: c.info.Name, Errno: syscall.EINVAL,
			Hint: fmt.Sprintf("GID index %d is negative", index)}
	}
	if C.ek_has_gid_ex(c.lib.p) == 0 {
		return sysfsGIDEntry("/", c.info.Name, port, index)
	}
	var e C.struct_ibv_gid_entry
	rc := C.ek_query_gid_ex(c.lib.p, c.ctx, C.int(port), C.int(index), &e)
	switch syscall.Errno(rc) {
	case 0:
	case syscall.ENODATA:
		return GIDEntry{}, false, nil
	default:
		err := c.fail("ibv_query_gid_ex", rc).(*Error)
		if pa, perr := c.QueryPort(port); perr == nil && index >= pa.GIDTblLen {
			err.Hint = fmt.Sprintf("GID index %d is beyond port %d's table of %d entries", index, port, pa.GIDTblLen)
		} else if err.Hint == "" {
			err.Hint = fmt.Sprintf("port %d, GID index %d", port, index)
		}
		return GIDEntry{}, false, err
	}
	g, ok := gidEntry(&e)
	return g, ok, nil
}

// gidEntry is e, or ok false where its GID is all zero (an empty slot).
func gidEntry(e *C.struct_ibv_gid_entry) (_ GIDEntry, ok bool) {
	var g gid.GID
	copy(g[:], C.GoBytes(unsafe.Pointer(&e.gid), 16))
	if g.IsZero() {
		return GIDEntry{}, false
	}
	return GIDEntry{Index: int(e.gid_index), GID: g, Type: GIDType(e.gid_type), NetdevIndex: int(e.ndev_ifindex)}, true
}

// maxGIDTable bounds the entries asked of ibv_query_gid_table.
const maxGIDTable = 1 << 16

// GIDs is the port's populated GID table entries, in index order. It reads
// the device's table with one ibv_query_gid_table where libibverbs has it
// (rdma-core 32 and later), not one ibv_query_gid_ex per slot: rxe has
// 1024 slots, and a QP's source GID is picked from them (sourceGID). In the
// lab a 16-QP bw loopback made 33,138 ioctls before, 434 after, and took
// 0.5 s less.
func (c *Context) GIDs(port int) ([]GIDEntry, error) {
	pa, err := c.QueryPort(port)
	if err != nil {
		return nil, err
	}
	if out, ok := c.gidTable(port, pa.GIDTblLen); ok {
		return out, nil
	}
	return c.gidsOneByOne(port, pa.GIDTblLen)
}

// gidTable is GIDs from one ibv_query_gid_table, or ok false where the
// library has none or it failed (GIDs then asks entry by entry, which
// names the entry that fails).
func (c *Context) gidTable(port, tblLen int) (_ []GIDEntry, ok bool) {
	if C.ek_has_gid_table(c.lib.p) == 0 || tblLen <= 0 {
		return nil, false
	}
	da, err := c.QueryDevice()
	if err != nil {
		return nil, false
	}
	limit := min(tblLen*max(da.PhysPortCnt, 1), maxGIDTable)
	entries := make([]C.struct_ibv_gid_entry, limit)
	var n C.int
	if rc := C.ek_query_gid_table(c.lib.p, c.ctx, &entries[0], C.int(limit), &n); rc != 0 {
		return nil, false
	}
	var out []GIDEntry
	for i := range int(n) {
		if int(entries[i].port_num) != port {
			continue
		}
		if g, ok := gidEntry(&entries[i]); ok {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b GIDEntry) int { return a.Index - b.Index })
	return out, true
}

// gidsOneByOne is GIDs by one ibv_query_gid_ex (or sysfs read) per entry.
func (c *Context) gidsOneByOne(port, tblLen int) ([]GIDEntry, error) {
	var out []GIDEntry
	for i := 0; i < tblLen; i++ {
		e, ok, err := c.queryGID(port, i)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// AllocPD is ibv_alloc_pd.
func (c *Context) AllocPD() (*PD, error) {
	pd := &PD{ctx: c}
	if err := pd.adopt(&c.node); err != nil {
		return nil, err
	}
	if rc := C.ek_alloc_pd(c.lib.p, c.ctx, &pd.pd); rc != 0 {
		c.release()
		return nil, c.fail("ibv_alloc_pd", rc)
	}
	return pd, nil
}

// ProbeDMABUF asks the device's provider whether it registers dma-bufs,
// as NCCL does (see DMABUFProbe): a PD, ibv_reg_dmabuf_mr with fd -1, the
// PD freed. Only a failing ibv_alloc_pd is an error.
func (c *Context) ProbeDMABUF() (DMABUFProbe, error) {
	pd, err := c.AllocPD()
	if err != nil {
		return DMABUFProbe{Device: c.info.Name}, err
	}
	rc := C.ek_probe_dmabuf(c.lib.p, pd.pd)
	if err := pd.Close(); err != nil {
		return DMABUFProbe{Device: c.info.Name}, err
	}
	return dmabufProbe(c.info.Name, int(rc)), nil
}

// CreateCQ is ibv_create_cq with at least cqe entries.
func (c *Context) CreateCQ(cqe int) (*CQ, error) {
	if cqe <= 0 {
		return nil, &Error{Verb: "ibv_create_cq", Device: c.info.Name, Errno: syscall.EINVAL, Hint: fmt.Sprintf("cqe %d: want at least 1", cqe)}
	}
	cq := &CQ{ctx: c, cqe: cqe}
	if err := cq.adopt(&c.node); err != nil {
		return nil, err
	}
	if rc := C.ek_create_cq(c.lib.p, c.ctx, C.int(cqe), &cq.cq); rc != 0 {
		c.release()
		return nil, c.fail("ibv_create_cq", rc)
	}
	return cq, nil
}

// Buffer is page-aligned, zeroed C memory that a device may access. Its
// Bytes view is valid until Close; Close refuses (EBUSY) while an MR
// registers it.
type Buffer struct {
	node
	p    unsafe.Pointer
	size int
}

// NewBuffer allocates size bytes of zeroed, page-aligned C memory.
func NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("ibverbs: buffer size %d: want at least 1 byte", size)
	}
	var p unsafe.Pointer
	if rc := C.ek_buf_alloc(C.size_t(size), &p); rc != 0 {
		return nil, fmt.Errorf("ibverbs: allocating %d bytes: %w", size, syscall.Errno(rc))
	}
	return &Buffer{p: p, size: size}, nil
}

// Bytes is a view of the buffer for filling and checking; invalid after Close.
func (b *Buffer) Bytes() []byte {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.p), b.size)
}

// Len is the buffer's size in bytes.
func (b *Buffer) Len() int { return b.size }

// Close frees the buffer; EBUSY while registered.
func (b *Buffer) Close() error {
	return b.close(func() error {
		C.ek_buf_free(b.p)
		b.p = nil
		return nil
	}, func(kids int) error {
		return &Error{Verb: "free buffer", Errno: syscall.EBUSY, Hint: fmt.Sprintf("%d MRs register it: close them first", kids)}
	})
}

// PD is a protection domain.
type PD struct {
	node
	ctx *Context
	pd  *C.struct_ibv_pd
}

// Close is ibv_dealloc_pd; EBUSY while MRs or QPs use it.
func (pd *PD) Close() error {
	return pd.close(func() error {
		if rc := C.ek_dealloc_pd(pd.ctx.lib.p, pd.pd); rc != 0 {
			return pd.ctx.fail("ibv_dealloc_pd", rc)
		}
		return nil
	}, pd.ctx.busy("ibv_dealloc_pd"))
}

// RegMR registers buf with the given access (AccessLocalWrite is always
// added: the device writes received data into it).
func (pd *PD) RegMR(buf *Buffer, access Access) (*MR, error) {
	if buf == nil {
		return nil, errors.New("ibverbs: RegMR: nil buffer")
	}
	mr := &MR{pd: pd, buf: buf}
	if err := mr.adopt(&pd.node, &buf.node); err != nil {
		return nil, err
	}
	access |= AccessLocalWrite
	if rc := C.ek_reg_mr(pd.ctx.lib.p, pd.pd, buf.p, C.size_t(buf.size), C.int(access), &mr.mr); rc != 0 {
		pd.release()
		buf.release()
		return nil, pd.ctx.fail("ibv_reg_mr", rc)
	}
	mr.lkey, mr.rkey = uint32(mr.mr.lkey), uint32(mr.mr.rkey)
	mr.addr = uint64(uintptr(buf.p))
	return mr, nil
}

// MR is a registered memory region.
type MR struct {
	node
	pd         *PD
	buf        *Buffer
	mr         *C.struct_ibv_mr
	lkey, rkey uint32
	addr       uint64
}

// LKey is the local key.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey is the remote key the peer writes with.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Addr is the registered address, as the peer uses it.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len is the registered length.
func (mr *MR) Len() int { return mr.buf.size }

// Buffer is the registered buffer.
func (mr *MR) Buffer() *Buffer { return mr.buf }

// Close is ibv_dereg_mr.
func (mr *MR) Close() error {
	return mr.close(func() error {
		if rc := C.ek_dereg_mr(mr.pd.ctx.lib.p, mr.mr); rc != 0 {
			return mr.pd.ctx.fail("ibv_dereg_mr", rc)
		}
		return nil
	}, mr.pd.ctx.busy("ibv_dereg_mr"))
}

// CQ is a completion queue.
type CQ struct {
	node
	ctx *Context
	cq  *C.struct_ibv_cq
	cqe int
}

// Cap is the number of entries asked for.
func (cq *CQ) Cap() int { return cq.cqe }

// Close is ibv_destroy_cq; EBUSY while QPs use it.
func (cq *CQ) Close() error {
	return cq.close(func() error {
		if rc := C.ek_destroy_cq(cq.ctx.lib.p, cq.cq); rc != 0 {
			return cq.ctx.fail("ibv_destroy_cq", rc)
		}
		cq.cq = nil
		return nil
	}, cq.ctx.busy("ibv_destroy_cq"))
}

// Poll fills wcs with up to len(wcs) completions in one cgo call and returns
// how many it wrote. If one of them failed, err is a *WCError for the first
// failed one (the others are still in wcs[:n]). Poll does not allocate
// unless a completion failed. Not safe concurrently with Close.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	if cq.cq == nil {
		return 0, ErrClosed
	}
	if len(wcs) == 0 {
		return 0, nil
	}
	n := int(C.ek_poll(cq.cq, (*C.ek_wc)(unsafe.Pointer(&wcs[0])), C.int(len(wcs))))
	if n < 0 {
		return 0, cq.ctx.fail("ibv_poll_cq", C.int(-n))
	}
	for i := 0; i < n; i++ {
		if wcs[i].Status != WCSuccess {
			return n, cq.wcError(&wcs[i])
		}
	}
	return n, nil
}

func (cq *CQ) wcError(wc *WC) error {
	return &WCError{
		Status:    wc.Status,
		StatusStr: C.GoString(C.ek_wc_status_str(cq.ctx.lib.p, C.int(wc.Status))),
		WRID:      wc.WRID,
		QPN:       wc.QPN,
		VendorErr: wc.VendorErr,
	}
}

// QP is an RC queue pair.
type QP struct {
	node
	pd       *PD
	q        *C.ek_qp
	cfg      QPConfig
	port     int
	gidIndex int
	psn      uint32
	qpn      uint32
	maxWR    int
	cm       bool
}

func (cfg QPConfig) withDefaults() QPConfig {
	if cfg.MaxSendWR <= 0 {
		cfg.MaxSendWR = 128
	}
	if cfg.MaxRecvWR <= 0 {
		cfg.MaxRecvWR = 16
	}
	if cfg.MaxSendSGE <= 0 {
		cfg.MaxSendSGE = 1
	}
	if cfg.MaxRecvSGE <= 0 {
		cfg.MaxRecvSGE = 1
	}
	if cfg.Port <= 0 {
		cfg.Port = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 14
	}
	if !cfg.RetryCntSet {
		cfg.RetryCnt = 7
	}
	if cfg.RNRRetry == 0 {
		cfg.RNRRetry = 7
	}
	if cfg.MinRNRTimer == 0 {
		cfg.MinRNRTimer = 12
	}
	if cfg.MaxRdAtomic == 0 {
		cfg.MaxRdAtomic = 1
	}
	if cfg.Access == 0 {
		cfg.Access = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	}
	return cfg
}

func (cfg QPConfig) caps() C.ek_qp_caps {
	return C.ek_qp_caps{
		max_send_wr:  C.int(cfg.MaxSendWR),
		max_recv_wr:  C.int(cfg.MaxRecvWR),
		max_send_sge: C.int(cfg.MaxSendSGE),
		max_recv_sge: C.int(cfg.MaxRecvSGE),
		max_inline:   C.int(cfg.MaxInlineData),
	}
}

// CreateQP creates an RC queue pair using cq for sends (and receives unless
// cfg.RecvCQ is set). The QP stays in RESET until Connect.
func (pd *PD) CreateQP(cq *CQ, cfg QPConfig) (*QP, error) {
	return pd.createQP(cq, cfg, nil)
}

func (pd *PD) createQP(cq *CQ, cfg QPConfig, cm *CMConn) (*QP, error) {
	if cq == nil {
		return nil, errors.New("ibverbs: CreateQP: nil CQ")
	}
	cfg = cfg.withDefaults()
	rcq := cfg.RecvCQ
	if rcq == nil {
		rcq = cq
	}
	qp := &QP{pd: pd, cfg: cfg, port: cfg.Port, cm: cm != nil}
	parents := []*node{&pd.node, &cq.node}
	if rcq != cq {
		parents = append(parents, &rcq.node)
	}
	if cm != nil {
		parents = append(parents, &cm.node)
	}
	if err := qp.adopt(parents...); err != nil {
		return nil, err
	}
	undo := func() {
		for _, p := range parents {
			p.release()
		}
	}
	ctx := pd.ctx
	if cm == nil {
		idx, err := ctx.sourceGID(cfg)
		if err != nil {
			undo()
			return nil, err
		}
		qp.gidIndex = idx
	}
	caps := cfg.caps()
	wrAPI := C.int(1)
	if cfg.OldPostSend {
		wrAPI = 0
	}
	var rc C.int
	verb := "ibv_create_qp"
	if cm != nil {
		verb = "rdma_create_qp"
		rc = C.ek_cm_create_qp(ctx.lib.p, cm.id, pd.pd, cq.cq, rcq.cq, &caps, &qp.q)
	} else {
		rc = C.ek_create_qp(ctx.lib.p, pd.pd, cq.cq, rcq.cq, &caps, wrAPI, &qp.q)
	}
	if rc != 0 {
		undo()
		return nil, ctx.fail(verb, rc)
	}
	qp.qpn, qp.maxWR = uint32(qp.q.qp.qp_num), int(qp.q.cap)
	qp.psn = cfg.PSN & 0xffffff
	if cfg.PSN == 0 {
		qp.psn = (qp.qpn*2654435761 + 1) & 0xffffff
	}
	return qp, nil
}

// sourceGID is the GID index a QP uses: cfg's when set, else picked.
func (c *Context) sourceGID(cfg QPConfig) (int, error) {
	if cfg.GIDIndexSet {
		if _, err := c.QueryGID(cfg.Port, cfg.GIDIndex); err != nil {
			return 0, err
		}
		return cfg.GIDIndex, nil
	}
	pa, err := c.QueryPort(cfg.Port)
	if err != nil {
		return 0, err
	}
	if pa.LinkLayer != LinkLayerEthernet {
		return 0, nil
	}
	gids, err := c.GIDs(cfg.Port)
	if err != nil {
		return 0, err
	}
	idx := pickGID(gids)
	if idx < 0 {
		return 0, &Error{Verb: "ibv_query_gid_ex", Device: c.info.Name, Errno: syscall.ENODATA,
			Hint: fmt.Sprintf("port %d has no populated GID: give its netdev an IP address", cfg.Port)}
	}
	return idx, nil
}

// QPN is the queue pair number.
func (qp *QP) QPN() uint32 { return qp.qpn }

// Port is the port the QP uses.
func (qp *QP) Port() int { return qp.port }

// GIDIndex is the source GID index the QP uses.
func (qp *QP) GIDIndex() int { return qp.gidIndex }

// MaxSendWR is the send queue depth, the longest list PostWrites takes.
func (qp *QP) MaxSendWR() int { return qp.maxWR }

// WRAPI reports whether the QP's writes are posted with the work request
// API (ibv_wr_*) rather than ibv_post_send: where the provider has it,
// unless QPConfig.OldPostSend (and never for an rdma_cm QP).
func (qp *QP) WRAPI() bool { return qp.q != nil && qp.q.qpx != nil }

// Endpoint is this QP's address for the peer: QPN, PSN, the source GID,
// LID and active MTU. Add the buffer the peer may write with WithMR.
func (qp *QP) Endpoint() (Endpoint, error) {
	if !qp.alive() {
		return Endpoint{}, ErrClosed
	}
	ctx := qp.pd.ctx
	pa, err := ctx.QueryPort(qp.port)
	if err != nil {
		return Endpoint{}, err
	}
	ep := Endpoint{QPN: qp.QPN(), PSN: qp.psn, LID: pa.LID, MTU: pa.ActiveMTU}
	if !qp.cm {
		if e, ok, err := ctx.queryGID(qp.port, qp.gidIndex); err != nil {
			return Endpoint{}, err
		} else if ok {
			ep.GID = e.GID
		}
	}
	return ep, nil
}

// Connect moves the QP INIT->RTR->RTS towards remote (the out-of-band
// path): with a GRH (is_global, the QP's source GID index) on Ethernet link
// layers or when the remote has no LID, by LID otherwise; the path MTU is
// the smaller of both sides' active MTUs.
func (qp *QP) Connect(remote Endpoint) error {
	if !qp.alive() {
		return ErrClosed
	}
	if qp.cm {
		return errors.New("ibverbs: QP.Connect: this QP belongs to an rdma_cm connection")
	}
	ctx := qp.pd.ctx
	pa, err := ctx.QueryPort(qp.port)
	if err != nil {
		return err
	}
	mtu := pa.ActiveMTU
	if remote.MTU.Bytes() != 0 && remote.MTU < mtu {
		mtu = remote.MTU
	}
	if mtu.Bytes() == 0 {
		mtu = MTU1024
	}
	global := pa.LinkLayer == LinkLayerEthernet || remote.LID == 0
	if global && remote.GID.IsZero() {
		return &Error{Verb: "ibv_modify_qp(RTR)", Device: ctx.info.Name, Errno: syscall.EINVAL,
			Hint: "remote endpoint has no GID (needed on Ethernet link layers)"}
	}
	cfg := qp.cfg
	c := C.ek_conn{
		port:               C.int(qp.port),
		access:             C.int(cfg.Access),
		dest_qpn:           C.uint32_t(remote.QPN),
		rq_psn:             C.uint32_t(remote.PSN),
		sq_psn:             C.uint32_t(qp.psn),
		dlid:               C.uint16_t(remote.LID),
		sgid_index:         C.int(qp.gidIndex),
		hop_limit:          64,
		mtu:                C.int(mtu),
		timeout:            C.uint8_t(cfg.Timeout),
		retry_cnt:          C.uint8_t(cfg.RetryCnt),
		rnr_retry:          C.uint8_t(cfg.RNRRetry),
		min_rnr_timer:      C.uint8_t(cfg.MinRNRTimer),
		max_rd_atomic:      C.uint8_t(cfg.MaxRdAtomic),
		max_dest_rd_atomic: C.uint8_t(cfg.MaxRdAtomic),
	}
	if global {
		c.is_global = 1
		for i := range remote.GID {
			c.dgid[i] = C.uint8_t(remote.GID[i])
		}
	}
	var stage C.int
	if rc := C.ek_connect(qp.q, &c, &stage); rc != 0 {
		verb := "ibv_modify_qp(INIT)"
		switch stage {
		case C.EK_STAGE_RTR:
			verb = "ibv_modify_qp(RTR)"
		case C.EK_STAGE_RTS:
			verb = "ibv_modify_qp(RTS)"
		}
		return ctx.fail(verb, rc)
	}
	return nil
}

// PostWrites posts one chained list of w.Count RDMA WRITEs in one cgo call
// (see Writes). It does not allocate unless it fails. Not safe concurrently
// with Close or with other posts on the same QP.
func (qp *QP) PostWrites(w Writes) error {
	if qp.q == nil {
		return ErrClosed
	}
	if w.MR == nil {
		return errors.New("ibverbs: PostWrites: nil MR")
	}
	if w.Count <= 0 || w.Count > int(qp.q.cap) {
		return fmt.Errorf("ibverbs: PostWrites: count %d outside 1..%d (the QP's MaxSendWR)", w.Count, int(qp.q.cap))
	}
	if w.Offset+uint64(w.Size) > uint64(w.MR.buf.size) {
		return fmt.Errorf("ibverbs: PostWrites: offset %d + size %d beyond the %d-byte MR", w.Offset, w.Size, w.MR.buf.size)
	}
	inl := C.int(0)
	if w.Inline {
		inl = 1
	}
	rc := C.ek_post_writes(qp.q, C.uint64_t(w.MR.addr+w.Offset), C.uint32_t(w.MR.lkey),
		C.uint64_t(w.RemoteAddr), C.uint32_t(w.RKey), C.uint32_t(w.Size), C.int(w.Count),
		C.int(w.SignalEvery), C.uint64_t(w.WRID), C.EK_WRID_SEQ, inl)
	if rc != 0 {
		e := qp.pd.ctx.fail("ibv_post_send", rc).(*Error)
		e.Hint = fmt.Sprintf("%d of %d WRITEs posted; the send queue may be full (poll more often)", int(qp.q.last_posted), w.Count)
		return e
	}
	return nil
}

// PostSend posts one signalled SEND of size bytes from mr at offset.
func (qp *QP) PostSend(mr *MR, offset uint64, size uint32, wrid uint64) error {
	if qp.q == nil {
		return ErrClosed
	}
	if offset+uint64(size) > uint64(mr.buf.size) {
		return fmt.Errorf("ibverbs: PostSend: offset %d + size %d beyond the %d-byte MR", offset, size, mr.buf.size)
	}
	if rc := C.ek_post_send(qp.q, C.uint64_t(mr.addr+offset), C.uint32_t(mr.lkey), C.uint32_t(size), C.uint64_t(wrid)); rc != 0 {
		return qp.pd.ctx.fail("ibv_post_send", rc)
	}
	return nil
}

// PostRecv posts one receive buffer of size bytes in mr at offset.
func (qp *QP) PostRecv(mr *MR, offset uint64, size uint32, wrid uint64) error {
	if qp.q == nil {
		return ErrClosed
	}
	if offset+uint64(size) > uint64(mr.buf.size) {
		return fmt.Errorf("ibverbs: PostRecv: offset %d + size %d beyond the %d-byte MR", offset, size, mr.buf.size)
	}
	if rc := C.ek_post_recv(qp.q, C.uint64_t(mr.addr+offset), C.uint32_t(mr.lkey), C.uint32_t(size), C.uint64_t(wrid)); rc != 0 {
		return qp.pd.ctx.fail("ibv_post_recv", rc)
	}
	return nil
}

// Close is ibv_destroy_qp (rdma_destroy_qp for an rdma_cm QP).
func (qp *QP) Close() error {
	return qp.close(func() error {
		if rc := C.ek_destroy_qp(qp.q); rc != 0 {
			return qp.pd.ctx.fail("ibv_destroy_qp", rc)
		}
		qp.q = nil
		return nil
	}, qp.pd.ctx.busy("ibv_destroy_qp"))
}

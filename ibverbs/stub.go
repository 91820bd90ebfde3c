//go:build !linux || !cgo

package ibverbs

import (
	"context"
	"net/netip"
	"time"
)

// Loader names the shared libraries to dlopen; empty names mean
// libibverbs.so.1 and librdmacm.so.1. Tests point it at a missing name to
// see ErrNotInstalled.
type Loader struct {
	Verbs  string
	RDMACM string
}

// Lib is a loaded libibverbs (and, if present, librdmacm).
type Lib struct{}

// Load opens the libraries. This build has no cgo: it returns ErrNotSupported.
func (l Loader) Load() (*Lib, error) { return nil, ErrNotSupported }

// DefaultLib is Loader{}.Load(), done once per process.
func DefaultLib() (*Lib, error) { return nil, ErrNotSupported }

// Devices lists the RDMA devices (ibv_get_device_list).
func Devices() ([]DeviceInfo, error) { return nil, ErrNotSupported }

// Open opens the named device (ibv_open_device).
func Open(name string) (*Context, error) { return nil, ErrNotSupported }

// Devices lists the RDMA devices (ibv_get_device_list).
func (lib *Lib) Devices() ([]DeviceInfo, error) { return nil, ErrNotSupported }

// Open opens the named device (ibv_open_device).
func (lib *Lib) Open(name string) (*Context, error) { return nil, ErrNotSupported }

// Context is an opened device (struct ibv_context).
type Context struct{}

// Name is the device name ("rxe0", "erdma_0").
func (c *Context) Name() string { return "" }

// Info is the device's list entry.
func (c *Context) Info() DeviceInfo { return DeviceInfo{} }

// Transport is the device's transport type.
func (c *Context) Transport() Transport { return TransportUnknown }

// QueryDevice is ibv_query_device.
func (c *Context) QueryDevice() (DeviceAttr, error) { return DeviceAttr{}, ErrNotSupported }

// QueryPort is ibv_query_port.
func (c *Context) QueryPort(port int) (PortAttr, error) { return PortAttr{}, ErrNotSupported }

// QueryGID is one GID table entry with its type.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) { return GIDEntry{}, ErrNotSupported }

// GIDs is the port's populated GID table entries.
func (c *Context) GIDs(port int) ([]GIDEntry, error) { return nil, ErrNotSupported }

// AllocPD is ibv_alloc_pd.
func (c *Context) AllocPD() (*PD, error) { return nil, ErrNotSupported }

// CreateCQ is ibv_create_cq with cqe entries.
func (c *Context) CreateCQ(cqe int) (*CQ, error) { return nil, ErrNotSupported }

// ProbeDMABUF is not supported in this build.
func (c *Context) ProbeDMABUF() (DMABUFProbe, error) { return DMABUFProbe{}, ErrNotSupported }

// Close closes the device.
func (c *Context) Close() error { return nil }

// Buffer is page-aligned C memory that a device may access.
type Buffer struct{}

// NewBuffer allocates size bytes of zeroed, page-aligned C memory.
func NewBuffer(size int) (*Buffer, error) { return nil, ErrNotSupported }

// Bytes is a view of the buffer; invalid after Close.
func (b *Buffer) Bytes() []byte { return nil }

// Len is the buffer's size in bytes.
func (b *Buffer) Len() int { return 0 }

// Close frees the buffer.
func (b *Buffer) Close() error { return nil }

// PD is a protection domain.
type PD struct{}

// RegMR registers buf for access.
func (pd *PD) RegMR(buf *Buffer, access Access) (*MR, error) { return nil, ErrNotSupported }

// CreateQP creates an RC queue pair using cq for sends (and receives unless
// cfg.RecvCQ is set).
func (pd *PD) CreateQP(cq *CQ, cfg QPConfig) (*QP, error) { return nil, ErrNotSupported }

// Close is ibv_dealloc_pd.
func (pd *PD) Close() error { return nil }

// MR is a registered memory region.
type MR struct{}

// LKey is the local key.
func (mr *MR) LKey() uint32 { return 0 }

// RKey is the remote key.
func (mr *MR) RKey() uint32 { return 0 }

// Addr is the registered address, as the peer uses it.
func (mr *MR) Addr() uint64 { return 0 }

// Len is the registered length.
func (mr *MR) Len() int { return 0 }

// Buffer is the registered buffer.
func (mr *MR) Buffer() *Buffer { return nil }

// Close is ibv_dereg_mr.
func (mr *MR) Close() error { return nil }

// CQ is a completion queue.
type CQ struct{}

// Poll fills wcs with completions.
func (cq *CQ) Poll(wcs []WC) (int, error) { return 0, ErrNotSupported }

// Cap is the number of entries the CQ holds.
func (cq *CQ) Cap() int { return 0 }

// Close is ibv_destroy_cq.
func (cq *CQ) Close() error { return nil }

// QP is an RC queue pair.
type QP struct{}

// QPN is the queue pair number.
func (qp *QP) QPN() uint32 { return 0 }

// Port is the port the QP uses.
func (qp *QP) Port() int { return 0 }

// GIDIndex is the source GID index the QP uses.
func (qp *QP) GIDIndex() int { return 0 }

// MaxSendWR is the send queue depth, the longest list PostWrites takes.
func (qp *QP) MaxSendWR() int { return 0 }

// WRAPI reports whether the QP's writes are posted with the work request
// API (ibv_wr_*) rather than ibv_post_send.
func (qp *QP) WRAPI() bool { return false }

// Endpoint is this QP's address for the peer.
func (qp *QP) Endpoint() (Endpoint, error) { return Endpoint{}, ErrNotSupported }

// Connect moves the QP INIT->RTR->RTS towards remote.
func (qp *QP) Connect(remote Endpoint) error { return ErrNotSupported }

// PostWrites posts one chained list of RDMA WRITEs.
func (qp *QP) PostWrites(w Writes) error { return ErrNotSupported }

// PostSend posts one SEND of size bytes from mr at offset.
func (qp *QP) PostSend(mr *MR, offset uint64, size uint32, wrid uint64) error {
	return ErrNotSupported
}

// PostRecv posts one receive buffer of size bytes in mr at offset.
func (qp *QP) PostRecv(mr *MR, offset uint64, size uint32, wrid uint64) error {
	return ErrNotSupported
}

// Close is ibv_destroy_qp.
func (qp *QP) Close() error { return nil }

// CMListener is a listening rdma_cm identifier.
type CMListener struct{}

// ListenCM listens for rdma_cm connections on addr ("10.0.9.1:7471").
func ListenCM(ctx context.Context, addr string, cfg CMConfig) (*CMListener, error) {
	return nil, ErrNotSupported
}

// ListenCM listens for rdma_cm connections on addr.
func (lib *Lib) ListenCM(ctx context.Context, addr string, cfg CMConfig) (*CMListener, error) {
	return nil, ErrNotSupported
}

// Addr is the bound address.
func (l *CMListener) Addr() netip.AddrPort { return netip.AddrPort{} }

// Accept waits for a connection request.
func (l *CMListener) Accept(ctx context.Context) (*CMConn, error) { return nil, ErrNotSupported }

// Close stops listening.
func (l *CMListener) Close() error { return nil }

// CMConn is one rdma_cm connection, active or passive.
type CMConn struct{}

// DialCM resolves the address and route to addr.
func DialCM(ctx context.Context, addr string, cfg CMConfig) (*CMConn, error) {
	return nil, ErrNotSupported
}

// DialCM resolves the address and route to addr.
func (lib *Lib) DialCM(ctx context.Context, addr string, cfg CMConfig) (*CMConn, error) {
	return nil, ErrNotSupported
}

// Context is the device the connection is bound to.
func (c *CMConn) Context() *Context { return nil }

// Remote is the peer's endpoint.
func (c *CMConn) Remote() Endpoint { return Endpoint{} }

// CreateQP creates the connection's QP.
func (c *CMConn) CreateQP(pd *PD, cq *CQ, cfg QPConfig) (*QP, error) { return nil, ErrNotSupported }

// Connect sends the request and waits until established.
func (c *CMConn) Connect(ctx context.Context, local Endpoint) (Endpoint, error) {
	return Endpoint{}, ErrNotSupported
}

// Accept answers a request and waits until established.
func (c *CMConn) Accept(ctx context.Context, local Endpoint) error { return ErrNotSupported }

// Close disconnects and destroys the identifier.
func (c *CMConn) Close() error { return nil }

// WriteStream runs an RDMA WRITE loop in C; this build has none.
type WriteStream struct{}

// NewWriteStream returns ErrNotSupported in this build.
func NewWriteStream(StreamConfig) (*WriteStream, error) { return nil, ErrNotSupported }

// Run returns ErrNotSupported in this build.
func (w *WriteStream) Run(time.Duration) (StreamStatus, error) {
	return StreamStatus{}, ErrNotSupported
}

// StopPosting does nothing in this build.
func (w *WriteStream) StopPosting() {}

// StartPeak does nothing in this build.
func (w *WriteStream) StartPeak() {}

// StopPeak does nothing in this build.
func (w *WriteStream) StopPeak() {}

// Stop does nothing in this build.
func (w *WriteStream) Stop() {}

// Close does nothing in this build.
func (w *WriteStream) Close() error { return nil }

// PingPong runs an RDMA WRITE ping-pong in C; this build has none.
type PingPong struct{}

// NewPingPong returns ErrNotSupported in this build.
func NewPingPong(PingConfig) (*PingPong, error) { return nil, ErrNotSupported }

// Run returns ErrNotSupported in this build.
func (p *PingPong) Run([]time.Duration, int, time.Duration) (PingStatus, error) {
	return PingStatus{}, ErrNotSupported
}

// Stop does nothing in this build.
func (p *PingPong) Stop() {}

// Close does nothing in this build.
func (p *PingPong) Close() error { return nil }

//go:build linux && cgo

package ibverbs

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

const (
	defaultCMTimeout = 5 * time.Second
	cmPollSlice      = 100 * time.Millisecond
)

func (cfg CMConfig) withDefaults() CMConfig {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultCMTimeout
	}
	if cfg.Backlog <= 0 {
		cfg.Backlog = 16
	}
	if cfg.RetryCount == 0 {
		cfg.RetryCount = 7
	}
	if cfg.RNRRetryCount == 0 {
		cfg.RNRRetryCount = 7
	}
	return cfg
}

func (lib *Lib) cmReady() error {
	if lib.cmErr != nil {
		return lib.cmErr
	}
	return nil
}

func cmFail(verb, dev string, rc C.int) error {
	errno := syscall.Errno(rc)
	return &Error{Verb: verb, Device: dev, Errno: errno, Hint: hintFor(verb, errno, TransportUnknown)}
}

// cmEvent is a copied, acknowledged rdma_cm event.
type cmEvent = C.ek_cm_event

// wait returns the next event on ch, polling the channel's non-blocking fd
// in slices so that ctx cancellation and the timeout are honoured.
func (lib *Lib) wait(ctx context.Context, ch *C.struct_rdma_event_channel, timeout time.Duration, verb, dev string, ev *cmEvent) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s on %s: waiting for the peer: %w", verb, dev, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &Error{Verb: verb, Device: dev, Errno: syscall.ETIMEDOUT, Hint: hintFor(verb, syscall.ETIMEDOUT, TransportUnknown)}
		}
		slice := min(left, cmPollSlice)
		rc := C.ek_cm_wait(lib.p, ch, C.int(slice/time.Millisecond+1), ev)
		if rc == 0 {
			return nil
		}
		if syscall.Errno(rc) != syscall.EAGAIN {
			return cmFail("rdma_get_cm_event", dev, rc)
		}
	}
}

func (lib *Lib) eventName(ev *cmEvent) string {
	return C.GoString(C.ek_cm_event_str(lib.p, ev.event))
}

// expect waits for want; any other event is an error naming it.
func (lib *Lib) expect(ctx context.Context, ch *C.struct_rdma_event_channel, timeout time.Duration, verb, dev string, want C.int, ev *cmEvent) error {
	if err := lib.wait(ctx, ch, timeout, verb, dev, ev); err != nil {
		return err
	}
	if ev.event == want {
		return nil
	}
	name := lib.eventName(ev)
	st := int(ev.status)
	e := &Error{Verb: verb, Device: dev, Hint: fmt.Sprintf("got %s (status %d)", name, st)}
	switch ev.event {
	case C.RDMA_CM_EVENT_REJECTED:
		e.Errno = syscall.ECONNREFUSED
		e.Hint += ": the peer rejected the connection or nobody listens there"
	case C.RDMA_CM_EVENT_UNREACHABLE, C.RDMA_CM_EVENT_ADDR_ERROR, C.RDMA_CM_EVENT_ROUTE_ERROR:
		e.Errno = syscall.EHOSTUNREACH
		if st < 0 {
			e.Errno = syscall.Errno(-st)
		}
		e.Hint += ": " + hintFor("rdma_", syscall.ETIMEDOUT, TransportUnknown)
	default:
		e.Errno = syscall.EPROTO
		if st < 0 {
			e.Errno = syscall.Errno(-st)
		}
	}
	return e
}

func parseAddr(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("ibverbs: rdma_cm address %q: want ip:port: %w", addr, err)
	}
	return ap, nil
}

func ipBytes(a netip.Addr) ([]byte, C.int) {
	if a.Is4() {
		b := a.As4()
		return b[:], 4
	}
	b := a.As16()
	return b[:], 16
}

// CMListener is a listening rdma_cm identifier.
type CMListener struct {
	node
	lib  *Lib
	cfg  CMConfig
	ch   *C.struct_rdma_event_channel
	id   *C.struct_rdma_cm_id
	addr netip.AddrPort
}

// ListenCM listens for rdma_cm connections on addr ("10.0.9.1:7471";
// "0.0.0.0:0" binds every device and picks a port) with the default Lib.
func ListenCM(ctx context.Context, addr string, cfg CMConfig) (*CMListener, error) {
	lib, err := DefaultLib()
	if err != nil {
		return nil, err
	}
	return lib.ListenCM(ctx, addr, cfg)
}

// ListenCM listens for rdma_cm connections on addr.
func (lib *Lib) ListenCM(ctx context.Context, addr string, cfg CMConfig) (*CMListener, error) {
	if err := lib.cmReady(); err != nil {
		return nil, err
	}
	ap, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	l := &CMListener{lib: lib, cfg: cfg.withDefaults()}
	if rc := C.ek_cm_channel(lib.p, &l.ch); rc != 0 {
		return nil, cmFail("rdma_create_event_channel", "", rc)
	}
	if rc := C.ek_cm_create_id(lib.p, l.ch, &l.id); rc != 0 {
		C.ek_cm_destroy_channel(lib.p, l.ch)
		return nil, cmFail("rdma_create_id", "", rc)
	}
	ip, n := ipBytes(ap.Addr())
	var port C.int
	if rc := C.ek_cm_bind_listen(lib.p, l.id, (*C.uint8_t)(unsafe.Pointer(&ip[0])), n, C.int(ap.Port()), C.int(l.cfg.Backlog), &port); rc != 0 {
		C.ek_cm_destroy_id(lib.p, l.id)
		C.ek_cm_destroy_channel(lib.p, l.ch)
		e := cmFail("rdma_bind_addr/rdma_listen", "", rc).(*Error)
		e.Hint = fmt.Sprintf("%s: is that address on an RDMA device's netdev, and the port free?", ap)
		return nil, e
	}
	l.addr = netip.AddrPortFrom(ap.Addr(), uint16(port))
	return l, nil
}

// Addr is the bound address (with the port picked when 0 was asked).
func (l *CMListener) Addr() netip.AddrPort { return l.addr }

// Accept waits for a connection request, bounded by ctx (and by
// CMConfig.Timeout when ctx has no deadline). The returned connection knows
// the peer's Endpoint (Remote) and its device (Context): create the PD, CQ,
// MR and QP (CMConn.CreateQP) there, then CMConn.Accept.
func (l *CMListener) Accept(ctx context.Context) (*CMConn, error) {
	if !l.alive() {
		return nil, ErrClosed
	}
	timeout := l.cfg.Timeout
	if _, ok := ctx.Deadline(); ok {
		timeout = 24 * time.Hour
	}
	var ev cmEvent
	for {
		if err := l.lib.wait(ctx, l.ch, timeout, "rdma_listen (accept)", l.addr.String(), &ev); err != nil {
			return nil, err
		}
		if ev.event == C.RDMA_CM_EVENT_CONNECT_REQUEST {
			break
		}
		// A listener sees nothing else worth stopping for.
	}
	id := ev.id
	var remote Endpoint
	pd := C.GoBytes(unsafe.Pointer(&ev.private_data[0]), ev.private_len)
	if err := remote.UnmarshalBinary(pd); err != nil {
		C.ek_cm_reject(l.lib.p, id)
		C.ek_cm_destroy_id(l.lib.p, id)
		return nil, fmt.Errorf("ibverbs: rdma_cm connect request on %s: rejected: %w", l.addr, err)
	}
	c := &CMConn{lib: l.lib, cfg: l.cfg, id: id, remote: remote, passive: true}
	if rc := C.ek_cm_channel(l.lib.p, &c.ch); rc != 0 {
		C.ek_cm_reject(l.lib.p, id)
		C.ek_cm_destroy_id(l.lib.p, id)
		return nil, cmFail("rdma_create_event_channel", "", rc)
	}
	if rc := C.ek_cm_migrate(l.lib.p, id, c.ch); rc != 0 {
		C.ek_cm_reject(l.lib.p, id)
		C.ek_cm_destroy_id(l.lib.p, id)
		C.ek_cm_destroy_channel(l.lib.p, c.ch)
		return nil, cmFail("rdma_migrate_id", "", rc)
	}
	c.bindContext()
	return c, nil
}

// Close stops listening; EBUSY while none. Connections already accepted are
// independent of it.
func (l *CMListener) Close() error {
	return l.close(func() error {
		if rc := C.ek_cm_destroy_id(l.lib.p, l.id); rc != 0 {
			return cmFail("rdma_destroy_id", "", rc)
		}
		C.ek_cm_destroy_channel(l.lib.p, l.ch)
		return nil
	}, func(int) error { return nil })
}

// CMConn is one rdma_cm connection, active (DialCM) or passive
// (CMListener.Accept), with its own event channel.
type CMConn struct {
	node
	lib       *Lib
	cfg       CMConfig
	ch        *C.struct_rdma_event_channel
	id        *C.struct_rdma_cm_id
	dev       *Context
	remote    Endpoint
	passive   bool
	connected bool
}

func (c *CMConn) bindContext() {
	v := C.ek_cm_verbs(c.id)
	name := C.GoString(C.ek_cm_dev_name(c.id))
	t := TransportUnknown
	nt := NodeUnknown
	if v != nil && v.device != nil {
		t = Transport(v.device.transport_type)
		nt = NodeType(v.device.node_type)
	}
	c.dev = &Context{lib: c.lib, ctx: v, info: DeviceInfo{Name: name, NodeType: nt, Transport: t}}
}

// DialCM resolves the address and the route to addr ("10.0.9.1:7471") with
// the default Lib.
func DialCM(ctx context.Context, addr string, cfg CMConfig) (*CMConn, error) {
	lib, err := DefaultLib()
	if err != nil {
		return nil, err
	}
	return lib.DialCM(ctx, addr, cfg)
}

// DialCM resolves the address and the route to addr, bounded by ctx and
// CMConfig.Timeout. The connection's Context is the device that reaches
// addr: create the PD, CQ, MR and QP (CMConn.CreateQP) there, then Connect.
func (lib *Lib) DialCM(ctx context.Context, addr string, cfg CMConfig) (*CMConn, error) {
	if err := lib.cmReady(); err != nil {
		return nil, err
	}
	ap, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	c := &CMConn{lib: lib, cfg: cfg.withDefaults()}
	if rc := C.ek_cm_channel(lib.p, &c.ch); rc != 0 {
		return nil, cmFail("rdma_create_event_channel", "", rc)
	}
	if rc := C.ek_cm_create_id(lib.p, c.ch, &c.id); rc != 0 {
		C.ek_cm_destroy_channel(lib.p, c.ch)
		return nil, cmFail("rdma_create_id", "", rc)
	}
	fail := func(err error) (*CMConn, error) {
		C.ek_cm_destroy_id(lib.p, c.id)
		C.ek_cm_destroy_channel(lib.p, c.ch)
		return nil, err
	}
	ms := C.int(c.cfg.Timeout / time.Millisecond)
	ip, n := ipBytes(ap.Addr())
	if rc := C.ek_cm_resolve_addr(lib.p, c.id, (*C.uint8_t)(unsafe.Pointer(&ip[0])), n, C.int(ap.Port()), ms); rc != 0 {
		e := cmFail("rdma_resolve_addr", addr, rc).(*Error)
		e.Hint = "no RDMA device has a route to " + ap.Addr().String()
		return fail(e)
	}
	var ev cmEvent
	if err := lib.expect(ctx, c.ch, c.cfg.Timeout+time.Second, "rdma_resolve_addr", addr, C.RDMA_CM_EVENT_ADDR_RESOLVED, &ev); err != nil {
		return fail(err)
	}
	if rc := C.ek_cm_resolve_route(lib.p, c.id, ms); rc != 0 {
		return fail(cmFail("rdma_resolve_route", addr, rc))
	}
	if err := lib.expect(ctx, c.ch, c.cfg.Timeout+time.Second, "rdma_resolve_route", addr, C.RDMA_CM_EVENT_ROUTE_RESOLVED, &ev); err != nil {
		return fail(err)
	}
	c.bindContext()
	return c, nil
}

// Context is the device the connection is bound to. It belongs to librdmacm:
// its Close only checks that nothing created on it is still open.
func (c *CMConn) Context() *Context { return c.dev }

// Remote is the peer's endpoint: known after Accept on the passive side and
// after Connect on the active side.
func (c *CMConn) Remote() Endpoint { return c.remote }

// CreateQP creates the connection's RC QP (rdma_create_qp) with pd and cq,
// which must come from c.Context().
func (c *CMConn) CreateQP(pd *PD, cq *CQ, cfg QPConfig) (*QP, error) {
	if !c.alive() {
		return nil, ErrClosed
	}
	if pd == nil || pd.ctx.ctx != c.dev.ctx {
		return nil, errors.New("ibverbs: CMConn.CreateQP: the PD must be allocated on the connection's Context()")
	}
	return pd.createQP(cq, cfg, c)
}

// Connect sends the connection request carrying local (encode the buffer the
// peer may write with Endpoint.WithMR) and waits until it is established;
// it returns the peer's endpoint. Bounded by ctx and CMConfig.Timeout.
func (c *CMConn) Connect(ctx context.Context, local Endpoint) (Endpoint, error) {
	if !c.alive() {
		return Endpoint{}, ErrClosed
	}
	var buf [EndpointSize]byte
	local.put(buf[:])
	dev := c.dev.info.Name
	if rc := C.ek_cm_connect(c.lib.p, c.id, unsafe.Pointer(&buf[0]), EndpointSize, C.int(c.cfg.RetryCount), C.int(c.cfg.RNRRetryCount), 1); rc != 0 {
		return Endpoint{}, cmFail("rdma_connect", dev, rc)
	}
	var ev cmEvent
	if err := c.lib.expect(ctx, c.ch, c.cfg.Timeout, "rdma_connect", dev, C.RDMA_CM_EVENT_ESTABLISHED, &ev); err != nil {
		return Endpoint{}, err
	}
	c.connected = true
	var remote Endpoint
	if err := remote.UnmarshalBinary(C.GoBytes(unsafe.Pointer(&ev.private_data[0]), ev.private_len)); err != nil {
		return Endpoint{}, fmt.Errorf("ibverbs: rdma_connect on %s: the peer's accept: %w", dev, err)
	}
	c.remote = remote
	return remote, nil
}

// Accept answers the request with local and waits until established.
func (c *CMConn) Accept(ctx context.Context, local Endpoint) error {
	if !c.alive() {
		return ErrClosed
	}
	var buf [EndpointSize]byte
	local.put(buf[:])
	dev := c.dev.info.Name
	if rc := C.ek_cm_accept(c.lib.p, c.id, unsafe.Pointer(&buf[0]), EndpointSize, C.int(c.cfg.RNRRetryCount), 1); rc != 0 {
		return cmFail("rdma_accept", dev, rc)
	}
	var ev cmEvent
	if err := c.lib.expect(ctx, c.ch, c.cfg.Timeout, "rdma_accept", dev, C.RDMA_CM_EVENT_ESTABLISHED, &ev); err != nil {
		return err
	}
	c.connected = true
	return nil
}

// Close disconnects and destroys the identifier; EBUSY while its QP or
// anything created on its Context is open.
func (c *CMConn) Close() error {
	return c.close(func() error {
		if err := c.dev.Close(); err != nil {
			return err
		}
		if c.connected {
			C.ek_cm_disconnect(c.lib.p, c.id)
		}
		if rc := C.ek_cm_destroy_id(c.lib.p, c.id); rc != 0 {
			return cmFail("rdma_destroy_id", c.dev.info.Name, rc)
		}
		C.ek_cm_destroy_channel(c.lib.p, c.ch)
		return nil
	}, c.dev.busy("rdma_destroy_id"))
}

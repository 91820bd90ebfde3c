package perf

import (
	"context"
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/connect"
)

// Link is one RDMA device as the engine drives it. The verbs implementation
// (NewVerbsLink) opens real queue pairs; NewEmulatedLink is an in-process
// emulated wire of known rate.
type Link interface {
	// Device is the device's name ("erdma_0", "rxe0").
	Device() string
	// Transport is the device's personality (connect.RoCE, IWARP, IB; the
	// fake's own "fake" connects like RoCE).
	Transport() connect.Transport
	// Open creates one test's resources: cfg.QPs reliable-connected queue
	// pairs on one completion queue, and one buffer of cfg.BufSize bytes that
	// the peer may write into.
	Open(ctx context.Context, cfg OpenConfig) (Session, error)
	// Counters reads the device's port counters (name -> value, names as the
	// driver spells them); nil and no error when the device has none. Each
	// read queries the device: it gives up when ctx ends.
	Counters(ctx context.Context) (map[string]uint64, error)
}

// OpenConfig is what Link.Open creates.
type OpenConfig struct {
	QPs       int
	TxDepth   int // send queue depth per QP
	MaxInline int // bytes; 0 for none
	BufSize   int // bytes of the registered buffer
	// OldPostSend: post with ibv_post_send even where the device's provider
	// has the work request API (ibverbs.QPConfig.OldPostSend).
	OldPostSend bool
	Method      connect.Method
	// Server is true on the passive side (its buffer is written into).
	Server bool
	// CMAddr is, for rdma_cm, the address the server binds or the client
	// connects to ("10.0.0.1:18601"); unused by the out-of-band method.
	CMAddr string
}

// Session is one test's queue pairs. Close releases every resource and is
// idempotent.
type Session interface {
	io.Closer
	// Local returns this side's endpoints, one per QP, for the peer.
	Local() []Endpoint
	// CMAddr (server side) is the rdma_cm address the client must connect
	// to; "" for the out-of-band method.
	CMAddr() string
	// Connect brings the QPs to RTS against the peer's endpoints.
	Connect(ctx context.Context, remote []Endpoint) error
	// PostWrites posts n RDMA writes of size bytes on queue pair qp into the
	// peer's buffer, as one post list. Every every-th write and the last are
	// signalled (CQ moderation); the completion of a signalled write reports
	// how many writes on its QP it stands for (those since the previous
	// signalled one).
	PostWrites(qp, n, size, every int) error
	// Poll stores up to len(c) completions in c and returns how many; it
	// does not block.
	Poll(c []Completion) (int, error)
}

// Completion is one signalled write's completion.
type Completion struct {
	QP     int32
	Writes int32 // writes this completion stands for
	Status int32 // 0 on success (IBV_WC_SUCCESS), else the work completion status
}

// CompletionError is a work completion with an error status.
type CompletionError struct {
	Device string
	QP     int
	Status int
	// Text is the verbs name of the status ("transport retry counter
	// exceeded") where the link knows it.
	Text string
}

func (e *CompletionError) Error() string {
	if e.Text != "" {
		return fmt.Sprintf("%s qp %d: work completion error %d (%s)", e.Device, e.QP, e.Status, e.Text)
	}
	return fmt.Sprintf("%s qp %d: work completion error %d", e.Device, e.QP, e.Status)
}

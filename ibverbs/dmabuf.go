package ibverbs

import (
	"fmt"
	"syscall"
)

// DMABUFProbe is a device's answer to NCCL's DMA-BUF probe: NCCL allocates a
// PD and calls ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) (src/transport/net_ib/gdr.cc,
// ibDmaBufSupportInitOnce). EOPNOTSUPP or EPROTONOSUPPORT means the provider
// (or the kernel driver under it) registers no dma-buf; any other answer,
// EBADF for the fd -1, means it would take a real one. rdma-core's default
// for a provider without reg_dmabuf_mr is EOPNOTSUPP (libibverbs/dummy_ops.c),
// and NCCL sets EOPNOTSUPP itself when libibverbs has no ibv_reg_dmabuf_mr
// (src/misc/ibvwrap.cc). No GPU is needed.
type DMABUFProbe struct {
	Device string `json:"device"`
	// Supported is NCCL's verdict: the device registers dma-bufs.
	Supported bool `json:"supported"`
	// Errno is what the call left (0 with NoSymbol, or in the impossible
	// case that fd -1 registered).
	Errno syscall.Errno `json:"errno"`
	// NoSymbol: libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34).
	NoSymbol bool `json:"no_symbol,omitempty"`
}

// DMABUFSupported is NCCL's reading of the probe's errno.
func DMABUFSupported(errno syscall.Errno) bool {
	return errno != syscall.EOPNOTSUPP && errno != syscall.EPROTONOSUPPORT
}

// Result names the answer as NCCL's comment does: "EOPNOTSUPP", "EBADF",
// "no ibv_reg_dmabuf_mr in libibverbs".
func (p DMABUFProbe) Result() string {
	if p.NoSymbol {
		return "no ibv_reg_dmabuf_mr in libibverbs (rdma-core < 34)"
	}
	return ErrnoName(p.Errno)
}

// ErrnoName is the C name of the errno values the probe can leave, else
// "errno N".
func ErrnoName(e syscall.Errno) string {
	switch e {
	case 0:
		return "success"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.EPROTONOSUPPORT:
		return "EPROTONOSUPPORT"
	case syscall.EBADF:
		return "EBADF"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.EFAULT:
		return "EFAULT"
	}
	return fmt.Sprintf("errno %d", int(e))
}

// dmabufProbe builds the probe's answer from the shim's return: -1 when
// the symbol is missing, else the errno.
func dmabufProbe(dev string, rc int) DMABUFProbe {
	if rc < 0 {
		return DMABUFProbe{Device: dev, NoSymbol: true}
	}
	e := syscall.Errno(rc)
	return DMABUFProbe{Device: dev, Errno: e, Supported: DMABUFSupported(e)}
}

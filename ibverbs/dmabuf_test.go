package ibverbs

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDMABUFProbeVerdict pins NCCL's reading of ibv_reg_dmabuf_mr(pd, 0, 0,
// 0, -1, 0) (src/transport/net_ib/gdr.cc ibDmaBufSupportInitOnce:
// "will fail with EOPNOTSUPP/EPROTONOSUPPORT if not supported (EBADF
// otherwise)"; a libibverbs without the symbol is EOPNOTSUPP,
// src/misc/ibvwrap.cc). The lab (TestLabProbeDMABUF) drives the no path
// on rxe; a provider with reg_dmabuf_mr (mlx5, efa, bnxt_re, irdma, mana)
// answers EBADF, the yes path here.
func TestDMABUFProbeVerdict(t *testing.T) {
	for _, c := range []struct {
		rc       int
		yes      bool
		noSymbol bool
		result   string
	}{
		{int(syscall.EOPNOTSUPP), false, false, "EOPNOTSUPP"},
		{int(syscall.EPROTONOSUPPORT), false, false, "EPROTONOSUPPORT"},
		{int(syscall.EBADF), true, false, "EBADF"},
		{int(syscall.EINVAL), true, false, "EINVAL"}, // NCCL: anything but the two "no" answers
		{-1, false, true, "no ibv_reg_dmabuf_mr in libibverbs (rdma-core < 34)"},
		{200, true, false, "errno 200"},
	} {
		p := dmabufProbe("erdma_0", c.rc)
		assert.Equal(t, c.yes, p.Supported, "rc %d", c.rc)
		assert.Equal(t, c.noSymbol, p.NoSymbol, "rc %d", c.rc)
		assert.Equal(t, c.result, p.Result())
		assert.Equal(t, "erdma_0", p.Device)
	}
	assert.Equal(t, syscall.ENOTSUP, syscall.EOPNOTSUPP, "Linux: one errno, 95")
}

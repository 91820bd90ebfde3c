package doctor

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nccl"
)

// NCCLEnv advises the NCCL environment for host h, as `erdmakit nccl env`
// does: inv (nil: the host's inventory, read without tools or counters, with
// its GPUs, through opt.NVML and opt.Verbs as GPUs reads them, for the GDR
// level), the NCCL installs under the host's root unless opts.NCCL names
// them, then nccl.AdviseEnv. It returns the advice and the inventory it used
// (whose Errors list what could not be read).
func NCCLEnv(ctx context.Context, h erdma.Host, inv *erdma.Inventory, opt Options, opts nccl.EnvOptions) (*nccl.EnvAdvice, *erdma.Inventory, error) {
	if inv == nil {
		var err error
		if inv, err = erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: true, SkipCounters: true}); err != nil {
			return nil, nil, err
		}
		GPUs(ctx, h, inv, opt)
	}
	if opts.NCCL == nil {
		opts.NCCL = nccl.DetectNCCL(ctx, h.Root())
	}
	return nccl.AdviseEnv(inv, opts), inv, nil
}

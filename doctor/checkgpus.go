package doctor

import (
	"context"
	"slices"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nvml"
)

// GPUCheckIDs are the doctor's GPU checks, in the order Run runs them.
func GPUCheckIDs() []string {
	return []string{erdma.FindingGPUDriver, erdma.FindingGDRPeermem, nvml.FindingGPUCount, nvml.FindingGPUDistance}
}

// CheckGPUs asks the doctor's GPU questions alone: is the NVIDIA driver
// loaded, is GPUDirect RDMA ready, are all the instance's GPUs there, how far
// is each GPU from its nearest eRDMA device. It reads what Run reads for them
// and runs the same checks (GPUCheckIDs; a contributed check of one of those
// IDs replaces it, as in Run), so its findings are the doctor's, word for
// word and severity for severity. `erdmakit gpus` exits by its Status.
//
// The Report holds those findings only; the nvml.Report is NVML's view (the
// GPUs, GPUDirect RDMA, the topology). Status is the findings' worst, and
// fail where NVML cannot be used at all: whoever asks about the GPUs gets no
// answer then, even where the doctor, on a host that need not have GPUs,
// skips them. opt.Interval is not used: no GPU check reads counters.
func CheckGPUs(ctx context.Context, h erdma.Host, opt Options) (*Report, *nvml.Report, error) {
	all, err := validate(opt)
	if err != nil {
		return nil, nil, err
	}
	ids := GPUCheckIDs()
	cs := slices.DeleteFunc(all, func(c Check) bool { return !slices.Contains(ids, c.ID) })
	inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: opt.SkipTools})
	if err != nil {
		return nil, nil, err
	}
	opt.Interval = 0
	rep, gpus, err := diagnose(ctx, h, inv, opt, cs)
	if err != nil {
		return nil, nil, err
	}
	if !gpus.Available {
		rep.Status = health.Worst(rep.Status, health.Fail)
	}
	return rep, gpus, nil
}

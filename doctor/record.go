package doctor

import (
	"context"
	"maps"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml"
)

// RecordOptions is what Record captures on top of the inventory's files.
type RecordOptions struct {
	erdma.RecordOptions
	// NVML reads the GPUs; nil means nvml.ForRoot(host root). Its answers
	// (or why it cannot answer) and the PCI and GPUDirect files package nvml
	// reads are recorded.
	NVML nvml.Library
	// Verbs probes each RDMA provider for DMA-BUF on a live host, as NCCL
	// does (verbsprobe.Live); nil records no probe.
	Verbs Verbs
	// Skipped is told what could not be recorded ("GPUs", "DMA-BUF probe")
	// and why; the recording goes on without it. nil: not told.
	Skipped func(what string, err error)
}

// Record writes a recording of h to out (erdma.RecordFile: atomic, a
// failure leaves out as it was) that `doctor --root out` replays check for
// check: the inventory's files, the GPUs as NVML saw them and the DMA-BUF
// probe. It is `erdmakit record` without --cloud, whose view the caller
// adds to opt.Files (eri.RecordFiles).
func Record(ctx context.Context, h erdma.Host, out string, opt RecordOptions) (*erdma.Inventory, error) {
	skipped := func(what string, err error) {
		if opt.Skipped != nil {
			opt.Skipped(what, err)
		}
	}
	files := maps.Clone(opt.Files)
	if files == nil {
		files = map[string][]byte{}
	}
	add := func(more map[string][]byte) {
		for k, v := range more {
			if _, given := opt.Files[k]; !given {
				files[k] = v
			}
		}
	}
	lib := opt.NVML
	if lib == nil {
		var err error
		if lib, err = nvml.ForRoot(ctx, h.Root()); err != nil {
			skipped("GPUs", err)
		}
	}
	if lib != nil {
		gpus, err := nvml.RecordFiles(ctx, lib, h.Root(), "erdmakit record")
		if err != nil {
			skipped("GPUs", err)
		}
		add(gpus)
	}
	if opt.Verbs != nil {
		probe, err := DMABUFRecordFiles(ctx, h, opt.Verbs)
		if err != nil {
			skipped("DMA-BUF probe", err)
		}
		add(probe)
	}
	ro := opt.RecordOptions
	ro.Files = files
	return erdma.RecordFile(ctx, h, out, ro)
}

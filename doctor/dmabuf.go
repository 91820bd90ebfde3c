package doctor

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/ibverbs"
	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/nvml"
)

// ProbeDMABUF asks each of names (at most maxVerbsDevices) whether its
// RDMA provider registers dma-bufs, as NCCL does before it uses DMA-BUF
// (ibverbs.Context.ProbeDMABUF), in the form nvml.ReadGDR takes and a
// recording keeps (nvml.DMABUFProbePath). A library that does not load, or
// a device that does not open, gives no answer: rdma-core's provider for
// the device's driver decides then (nvml.ProviderDMABUF).
func ProbeDMABUF(ctx context.Context, loader ibverbs.Loader, names []string) []nvml.ProbeResult {
	lib, err := loader.Load()
	if err != nil {
		return nil
	}
	var out []nvml.ProbeResult
	for _, name := range names {
		if ctx.Err() != nil || len(out) >= maxVerbsDevices {
			break
		}
		c, err := lib.Open(name)
		if err != nil {
			continue
		}
		p, err := c.ProbeDMABUF()
		c.Close()
		if err != nil {
			continue
		}
		out = append(out, nvml.ProbeResult{Device: p.Device, Supported: p.Supported, Result: p.Result()})
	}
	return out
}

// liveDMABUFProbe is ProbeDMABUF on a live host's RDMA devices; nil on a
// recorded host (nvml reads its recorded probe).
func liveDMABUFProbe(ctx context.Context, h erdma.Host, devs []erdma.Device) []nvml.ProbeResult {
	if !h.Live() || len(devs) == 0 {
		return nil
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	return ProbeDMABUF(ctx, ibverbs.Loader{}, names)
}

// DMABUFRecordFiles is what a recording of h needs so that --root replays
// the DMA-BUF probe (for erdma.RecordOptions.Files): on a live host the
// probe of every device libibverbs lists, at nvml.DMABUFProbePath; on a
// recorded host the probe it recorded, if any.
func DMABUFRecordFiles(ctx context.Context, h erdma.Host) (map[string][]byte, error) {
	if !h.Live() {
		r, err := hostfs.OpenContext(ctx, h.Root())
		if err != nil {
			return nil, err
		}
		defer r.Close()
		b, err := r.ReadFile(nvml.DMABUFProbePath, 1<<20)
		if err != nil {
			return map[string][]byte{}, nil
		}
		return map[string][]byte{nvml.DMABUFProbePath: b}, nil
	}
	lib, err := ibverbs.Loader{}.Load()
	if err != nil {
		return map[string][]byte{}, nil
	}
	infos, err := lib.Devices()
	if err != nil {
		return map[string][]byte{}, nil
	}
	names := make([]string, 0, len(infos))
	for _, d := range infos {
		names = append(names, d.Name)
	}
	b, err := nvml.WriteProbes(ProbeDMABUF(ctx, ibverbs.Loader{}, names))
	if err != nil {
		return nil, err
	}
	return map[string][]byte{nvml.DMABUFProbePath: b}, nil
}

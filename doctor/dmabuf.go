package doctor

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/nvml"
)

// liveDMABUFProbe is v's DMA-BUF probe of a live host's RDMA devices (at
// most MaxVerbsDevices); nil on a recorded host (nvml reads its recorded
// probe) or without v.
func liveDMABUFProbe(ctx context.Context, h erdma.Host, devs []erdma.Device, v Verbs) []nvml.ProbeResult {
	if !h.Live() || len(devs) == 0 || v == nil {
		return nil
	}
	names := make([]string, 0, len(devs))
	for _, d := range devs[:min(len(devs), MaxVerbsDevices)] {
		names = append(names, d.Name)
	}
	return v.ProbeDMABUF(ctx, names)
}

// DMABUFRecordFiles is what a recording of h needs so that --root replays
// the DMA-BUF probe (for erdma.RecordOptions.Files): on a live host v's
// probe of every device libibverbs lists, at nvml.DMABUFProbePath (nothing
// without v, or where libibverbs does not load); on a recorded host the
// probe it recorded, if any.
func DMABUFRecordFiles(ctx context.Context, h erdma.Host, v Verbs) (map[string][]byte, error) {
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
	if v == nil {
		return map[string][]byte{}, nil
	}
	p := v.Probe(ctx, nil, nil)
	if p.LoadErr != nil || p.ListErr != nil {
		return map[string][]byte{}, nil
	}
	names := p.Listed[:min(len(p.Listed), MaxVerbsDevices)]
	b, err := nvml.WriteProbes(v.ProbeDMABUF(ctx, names))
	if err != nil {
		return nil, err
	}
	return map[string][]byte{nvml.DMABUFProbePath: b}, nil
}

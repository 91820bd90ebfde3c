// Package verbsprobe is the doctor's libibverbs probe on the live host
// (doctor.Verbs), through package ibverbs: libibverbs.so.1 loaded with
// dlopen by a small cgo shim. Package doctor does not import ibverbs, so
// that a program importing the doctor builds without it; one that wants the
// verbs check and the live DMA-BUF probe, as `erdmakit doctor` runs them,
// passes Live:
//
//	opt := doctor.DefaultOptions()
//	opt.Verbs = verbsprobe.Live{}
//	rep, err := doctor.Run(ctx, erdma.LiveHost(), opt)
package verbsprobe

import (
	"context"
	"slices"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/ibverbs"
	"github.com/erdmakit/erdmakit/nvml"
)

// Live asks the host's libibverbs, loaded by Loader (the zero value:
// libibverbs.so.1 from the dynamic linker's path).
type Live struct {
	Loader ibverbs.Loader
}

var _ doctor.Verbs = Live{}

// Probe loads libibverbs, lists its devices and opens each of names that
// it lists (at most doctor.MaxVerbsDevices), querying ports
// 1..ports[name]. Errors are the probe's fields (LoadErr, ListErr, a
// device's OpenErr, a port's Err), as the verbs check reports them.
func (l Live) Probe(ctx context.Context, names []string, ports map[string]int) doctor.VerbsProbe {
	var p doctor.VerbsProbe
	lib, err := l.Loader.Load()
	if err != nil {
		p.LoadErr = err
		return p
	}
	infos, err := lib.Devices()
	if err != nil {
		p.ListErr = err
		return p
	}
	for _, d := range infos {
		p.Listed = append(p.Listed, d.Name)
	}
	for _, name := range names {
		if ctx.Err() != nil || len(p.Devices) >= doctor.MaxVerbsDevices {
			break
		}
		if !slices.Contains(p.Listed, name) {
			continue
		}
		vd := doctor.VerbsDevice{Name: name}
		c, err := lib.Open(name)
		if err != nil {
			vd.OpenErr = err
			p.Devices = append(p.Devices, vd)
			continue
		}
		for port := 1; port <= ports[name]; port++ {
			a, err := c.QueryPort(port)
			vd.Ports = append(vd.Ports, doctor.VerbsPort{Number: port, State: a.State.String(), Err: err})
		}
		c.Close()
		p.Devices = append(p.Devices, vd)
	}
	return p
}

// ProbeDMABUF asks each of names (at most doctor.MaxVerbsDevices) whether
// its RDMA provider registers dma-bufs, as NCCL does before it uses DMA-BUF
// (ibverbs.Context.ProbeDMABUF), in the form nvml.ReadGDR takes and a
// recording keeps (nvml.DMABUFProbePath). A library that does not load, or
// a device that does not open, gives no answer: rdma-core's provider for
// the device's driver decides then (nvml.ProviderDMABUF).
func (l Live) ProbeDMABUF(ctx context.Context, names []string) []nvml.ProbeResult {
	lib, err := l.Loader.Load()
	if err != nil {
		return nil
	}
	var out []nvml.ProbeResult
	for _, name := range names {
		if ctx.Err() != nil || len(out) >= doctor.MaxVerbsDevices {
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

package main

import (
	"context"
	"slices"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml"
)

// doctorReport is the doctor's whole pipeline, shared by `doctor`, `fleet
// doctor` and the exporter: read the host, learn the instance, look at the
// GPUs through NVML, run the checks. before, when set, is called once the
// inventory is read (the doctor prints a note before the counter interval).
func doctorReport(ctx context.Context, h erdma.Host, f doctorFlags, flagInstance *erdma.Instance, before func(*erdma.Inventory)) (*erdma.Report, error) {
	inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: f.skipTools})
	if err != nil {
		return nil, err
	}
	return diagnoseInventory(ctx, h, inv, f, flagInstance, before), nil
}

// diagnoseInventory runs the checks on an inventory already read.
func diagnoseInventory(ctx context.Context, h erdma.Host, inv *erdma.Inventory, f doctorFlags, flagInstance *erdma.Instance, before func(*erdma.Inventory)) *erdma.Report {
	opt := erdma.DoctorOptions{}
	inst, instErr := doctorInstance(ctx, h, f, flagInstance)
	erdma.SetInstance(inv, inst)
	opt.InstanceError = instErr
	gpus := doctorGPUs(ctx, h, inv)
	if h.Live() && f.interval > 0 {
		opt.Interval = f.interval
		opt.Counters = erdma.CounterSourceFunc(func(_ context.Context, dev string, port int) (map[string]uint64, error) {
			return erdma.ReadCounters(h, dev, port)
		})
	}
	if before != nil {
		before(inv)
	}
	rep := erdma.Diagnose(ctx, inv, opt)
	addGPUFindings(rep, gpus, inv.Profile)
	return rep
}

// doctorGPUs reads the GPUs through NVML (live, or the recorded snapshot)
// and fills inv.GPU; nil when NVML could not even be set up.
func doctorGPUs(ctx context.Context, h erdma.Host, inv *erdma.Inventory) *nvml.Report {
	lib, err := nvml.ForRoot(h.Root())
	if err != nil {
		return nil
	}
	nics, _ := nicsOf(inv.Devices)
	rep, err := nvml.Inspect(ctx, lib, h.Root(), nics)
	if err != nil || rep == nil {
		return nil
	}
	info := rep.GPUInfo()
	inv.GPU = &info
	return rep
}

// addGPUFindings adds the nvml package's GPU checks the erdma doctor does not
// make itself (GPU count vs the profile, GPU<->eRDMA distance), right after
// the doctor's own GPU checks. Where both judge the same thing (driver,
// peermem) the doctor's finding stands: it has the same facts through
// inv.GPU.
func addGPUFindings(rep *erdma.Report, gpus *nvml.Report, profile *erdma.Profile) {
	if gpus == nil || !gpus.Available {
		return
	}
	at := slices.IndexFunc(rep.Findings, func(f erdma.Finding) bool { return f.ID == "gdr-peermem" }) + 1
	if at == 0 {
		at = len(rep.Findings)
	}
	for _, f := range gpus.Findings(profile) {
		if slices.ContainsFunc(rep.Findings, func(x erdma.Finding) bool { return x.ID == f.ID }) {
			continue
		}
		rep.Findings = slices.Insert(rep.Findings, at, f)
		at++
		rep.Status = erdma.Worst(rep.Status, f.Severity)
	}
}

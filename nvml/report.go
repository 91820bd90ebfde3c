package nvml

import (
	"context"
	"errors"
	"fmt"
)

// Report is everything erdmakit knows about a host's GPUs: what NVML says,
// GPUDirect RDMA readiness and the GPU<->NIC topology.
type Report struct {
	Root string `json:"root"`
	// Available is false when NVML could not be used; Reason says why in
	// plain words and Error gives NVML's code.
	Available   bool   `json:"available"`
	Reason      string `json:"reason,omitempty"`
	Error       string `json:"error,omitempty"`
	Remediation string `json:"remediation,omitempty"`
	// GPUs is nil when NVML is unavailable.
	GPUs *GPUs `json:"gpus,omitempty"`
	GDR  GDR   `json:"gdr"`
	// Topology is nil when there are no GPUs to place.
	Topology *Topology `json:"topology,omitempty"`
}

// Inspect reads the GPUs through lib, GPUDirect RDMA readiness and the
// GPU<->NIC topology under root. NVML failures do not fail it: they are
// the report's Reason (the doctor turns them into findings). Only a
// cancelled context is an error. probes are a live DMA-BUF probe's answers
// (ReadGDR).
func Inspect(ctx context.Context, lib Library, root string, nics []NIC, probes ...ProbeResult) (*Report, error) {
	rep := &Report{Root: root}
	gpus, err := ReadGPUs(ctx, lib, root)
	var ie *InitError
	switch {
	case err == nil:
		rep.Available, rep.GPUs = true, gpus
	case errors.As(err, &ie):
		rep.Reason, rep.Error, rep.Remediation = ie.Reason, ie.Error(), ie.Remediation
	default:
		return nil, err
	}
	drv := ""
	if gpus != nil {
		drv = gpus.DriverVersion
	}
	rep.GDR = ReadGDR(ctx, root, drv, probes...)
	if gpus != nil && len(gpus.GPUs) > 0 {
		rep.Topology = ComputeTopology(ctx, root, gpus.GPUs, nics)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("GPUs under %s: %w", root, err)
	}
	return rep, nil
}

// Ids of the GPU checks (package doctor decides them from a Report, in the
// guide's order); gpu-driver and gdr-peermem are erdma's.
const (
	FindingGPUCount    = "gpu-count"
	FindingGPUDistance = "gpu-nic-distance"
)

// Unavailable is the report of a host whose NVML could not even be set up
// (a recorded snapshot that does not parse): every GPU check skips with err
// as its reason.
func Unavailable(root string, err error) *Report {
	return &Report{Root: root, Reason: "NVML not set up", Error: err.Error()}
}

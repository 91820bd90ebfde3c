//go:build cgo

package doctor_test

import (
	"context"
	"sync/atomic"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nvml"
)

// countingNVML is a go-nvml mock of an NVML with one GPU whose driver
// bundles nvidia_peermem; each NVML session (nvml.Inspect) is one Init.
func countingNVML() *mock.Interface {
	dev := &mock.Device{
		GetNameFunc:        func() (string, gonvml.Return) { return "NVIDIA H20", gonvml.SUCCESS },
		GetUUIDFunc:        func() (string, gonvml.Return) { return "GPU-0", gonvml.SUCCESS },
		GetPciInfoFunc:     func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, gonvml.ERROR_NOT_SUPPORTED },
		GetMemoryInfoFunc:  func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 1 << 30}, gonvml.SUCCESS },
		GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
		GetNumaNodeIdFunc:  func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
	}
	return &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ErrorStringFunc:                func(gonvml.Return) string { return "mock" },
		ExtensionsFunc:                 func() gonvml.ExtendedInterface { return nil },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "535.161.08", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 12020, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc:     func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS },
	}
}

// countingVerbs counts DMA-BUF probes (asked only on a live host).
type countingVerbs struct{ dmabuf atomic.Int32 }

func (v *countingVerbs) Probe(context.Context, []string, map[string]int) doctor.VerbsProbe {
	return doctor.VerbsProbe{}
}

func (v *countingVerbs) ProbeDMABUF(context.Context, []string) []nvml.ProbeResult {
	v.dmabuf.Add(1)
	return nil
}

// TestFixPlanningDoesNotProbeTheGPUsAgain: the doctor reads the GPUs once
// (one NVML session); doctor --fix's planning (PlanFixes) and setup's
// (PlanStage) plan the gpu stage from the report it returned and open no
// second session.
func TestFixPlanningDoesNotProbeTheGPUsAgain(t *testing.T) {
	ctx := context.Background()
	h := erdma.RecordedHost(hostDir(t, "no-peermem"))
	lib, verbs := countingNVML(), &countingVerbs{}
	opt := doctor.Options{NVML: lib, Verbs: verbs}
	rep, err := doctor.Run(ctx, h, opt)
	require.NoError(t, err)
	require.Len(t, lib.InitCalls(), 1, "the doctor reads the GPUs once")
	probes := verbs.dmabuf.Load()
	require.NotNil(t, rep.Host.GPU)
	assert.Equal(t, "535.161.08", rep.Host.GPU.DriverVersion)

	plans, err := doctor.PlanFixes(ctx, h, rep, opt, &doctor.FixEnv{Describe: true})
	require.NoError(t, err)
	var gpu *doctor.Plan
	for _, p := range plans {
		if p.Stage == doctor.StageGPU {
			gpu = p
		}
	}
	require.NotNil(t, gpu, "gdr-peermem fails: its fix is planned")
	assert.Contains(t, gpu.Commands(), "modprobe nvidia_peermem")
	p, err := doctor.PlanStage(ctx, h, rep, opt, doctor.StageGPU, &doctor.FixEnv{Describe: true})
	require.NoError(t, err)
	assert.Equal(t, gpu.Commands(), p.Commands())

	assert.Len(t, lib.InitCalls(), 1, "fix planning opened a second NVML session")
	assert.Equal(t, probes, verbs.dmabuf.Load(), "fix planning probed DMA-BUF again")
}

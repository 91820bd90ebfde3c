//go:build cgo

package doctor_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/nvmltest"
	"github.com/erdmakit/erdmakit/nvml"
)

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
	lib, verbs := nvmltest.OneGPU(), &countingVerbs{}
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

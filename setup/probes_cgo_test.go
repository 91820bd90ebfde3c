//go:build cgo

package setup_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/nvmltest"
	"github.com/erdmakit/erdmakit/setup"
)

// TestSetupReadsTheGPUsOnce: a dry run of every stage on a host whose
// gdr-peermem fails reads the GPUs once (one NVML session, the doctor's);
// the gpu stage plans from the doctor's report.
func TestSetupReadsTheGPUsOnce(t *testing.T) {
	lib := nvmltest.OneGPU()
	res, err := setup.Run(context.Background(), setup.Options{Root: fixture.Host(t, "no-peermem"), DryRun: true,
		Only: []string{doctor.StageDriver, doctor.StageOS, doctor.StageGPU, doctor.StageLimits}, Doctor: doctor.Options{NVML: lib}})
	require.NoError(t, err)
	assert.Equal(t, setup.StatusPlanned, stageOf(t, res, doctor.StageGPU).Status)
	assert.Len(t, lib.InitCalls(), 1, "a stage read the GPUs again")
}

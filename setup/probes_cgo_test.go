//go:build cgo

package setup_test

import (
	"context"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/setup"
)

// TestSetupReadsTheGPUsOnce: a dry run of every stage on a host whose
// gdr-peermem fails reads the GPUs once (one NVML session, the doctor's);
// the gpu stage plans from the doctor's report.
func TestSetupReadsTheGPUsOnce(t *testing.T) {
	dev := &mock.Device{
		GetNameFunc:        func() (string, gonvml.Return) { return "NVIDIA H20", gonvml.SUCCESS },
		GetUUIDFunc:        func() (string, gonvml.Return) { return "GPU-0", gonvml.SUCCESS },
		GetPciInfoFunc:     func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, gonvml.ERROR_NOT_SUPPORTED },
		GetMemoryInfoFunc:  func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 1 << 30}, gonvml.SUCCESS },
		GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
		GetNumaNodeIdFunc:  func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
	}
	lib := &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ErrorStringFunc:                func(gonvml.Return) string { return "mock" },
		ExtensionsFunc:                 func() gonvml.ExtendedInterface { return nil },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "535.161.08", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 12020, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc:     func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS },
	}
	res, err := setup.Run(context.Background(), setup.Options{Root: fixture.Host(t, "no-peermem"), DryRun: true,
		Only: []string{doctor.StageDriver, doctor.StageOS, doctor.StageGPU, doctor.StageLimits}, Doctor: doctor.Options{NVML: lib}})
	require.NoError(t, err)
	assert.Equal(t, setup.StatusPlanned, stageOf(t, res, doctor.StageGPU).Status)
	assert.Len(t, lib.InitCalls(), 1, "a stage read the GPUs again")
}

//go:build cgo

package nvml

import (
	"context"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func inspectFixture(t *testing.T, host string, nics []NIC) *Report {
	t.Helper()
	lib, err := ForRoot(t.Context(), hostRoot(t, host))
	require.NoError(t, err)
	rep, err := Inspect(context.Background(), lib, hostRoot(t, host), nics)
	require.NoError(t, err)
	return rep
}

func TestInspectHealthy(t *testing.T) {
	rep := inspectFixture(t, "ebmgn8is-healthy", healthyNICs())
	require.True(t, rep.Available)
	require.Len(t, rep.GPUs.GPUs, 8)
	assert.Equal(t, "535.161.08", rep.GPUs.DriverVersion)
	assert.Equal(t, "nvidia_peermem", rep.GDR.Path)
	require.Len(t, rep.Topology.Nearest, 8)
	n := rep.Topology.Nearest[5]
	assert.Equal(t, []any{5, "erdma_1", Link("NODE")}, []any{n.GPU, n.NIC, n.Distance})
	// The doctor's gpu-count and gpu-nic-distance checks on it: doctor/gpus_test.go.
}

func TestInspectNoPeermem(t *testing.T) {
	rep := inspectFixture(t, "no-peermem", healthyNICs())
	assert.False(t, rep.GDR.Ready)
	assert.Contains(t, rep.GDR.Missing, "driver 535 >= 470 bundles nvidia_peermem but it is not loaded; DMA-BUF: kernel 5.10.134")
	assert.Contains(t, rep.GDR.Remediation, "modprobe nvidia_peermem")
	assert.Contains(t, rep.GDR.Remediation, "/etc/modules-load.d/")
	assert.Empty(t, rep.GDR.Path)
}

func TestInspectInitFailure(t *testing.T) {
	lib := mockNVML(true)
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	rep, err := Inspect(context.Background(), lib, hostRoot(t, "no-peermem"), healthyNICs())
	require.NoError(t, err, "an NVML failure is a finding, not an error")
	assert.False(t, rep.Available)
	assert.Equal(t, "no NVIDIA driver", rep.Reason)
	assert.Nil(t, rep.GPUs)
	assert.Nil(t, rep.Topology)
}

package doctor

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CheckGPUs says what Run says about the GPUs, on every recorded host.
func TestCheckGPUsAgreesWithRun(t *testing.T) {
	hosts, err := filepath.Glob("../testdata/hosts/*.tar.gz")
	require.NoError(t, err)
	require.NotEmpty(t, hosts)
	ctx := context.Background()
	for _, p := range hosts {
		t.Run(filepath.Base(p), func(t *testing.T) {
			h, closer, err := erdma.OpenHost(ctx, p)
			require.NoError(t, err)
			defer closer.Close()
			full, err := Run(ctx, h, Options{})
			require.NoError(t, err)
			rep, gpus, err := CheckGPUs(ctx, h, Options{})
			require.NoError(t, err)
			var want []health.Finding
			status := health.OK
			for _, f := range full.Findings {
				if slices.Contains(GPUCheckIDs(), f.ID) {
					want = append(want, f)
					status = health.Worst(status, f.Severity)
				}
			}
			require.Len(t, want, len(GPUCheckIDs()))
			assert.Equal(t, want, rep.Findings)
			if !gpus.Available {
				status = health.Worst(status, health.Fail)
			}
			assert.Equal(t, status, rep.Status)
		})
	}
}

// Where NVML cannot be used, the doctor may skip the GPUs (nothing says the
// host has any) but whoever asked about them gets a fail.
func TestCheckGPUsWithoutNVML(t *testing.T) {
	ctx := context.Background()
	h, closer, err := erdma.OpenHost(ctx, t.TempDir())
	require.NoError(t, err)
	defer closer.Close()
	rep, gpus, err := CheckGPUs(ctx, h, Options{})
	require.NoError(t, err)
	assert.False(t, gpus.Available)
	assert.Equal(t, health.Fail, rep.Status)
	for _, f := range rep.Findings {
		assert.NotEqual(t, health.Fail, f.Severity, f.ID)
	}

	_, _, err = CheckGPUs(ctx, h, Options{Interval: -1})
	assert.ErrorIs(t, err, ErrOptions)
}

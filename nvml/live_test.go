package nvml

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The live library on whatever machine runs the tests: on the build
// machines there is no libnvidia-ml, which must be a plain InitError, never
// a crash; on a GPU machine it must read GPUs.
func TestLiveLibrary(t *testing.T) {
	g, err := ReadGPUs(context.Background(), Live(), "/")
	var ie *InitError
	switch {
	case err == nil:
		t.Logf("live NVML: driver %s, %d GPUs", g.DriverVersion, len(g.GPUs))
		for _, x := range g.GPUs {
			assert.True(t, looksLikeBDF(x.PCIAddress), x.PCIAddress)
		}
	case errors.As(err, &ie):
		t.Logf("live NVML unavailable: %v", err)
		assert.NotEmpty(t, ie.Reason)
		assert.NotEmpty(t, ie.Remediation)
	default:
		t.Fatalf("live NVML: %v is not an InitError", err)
	}
	s, err := Capture(context.Background(), Live(), "test")
	if errors.Is(err, ErrNoCgo) {
		return // a build without cgo records no live NVML (TestNoCgo)
	}
	if assert.NoError(t, err) {
		assert.Equal(t, SnapshotSchema, s.Schema)
	}
}

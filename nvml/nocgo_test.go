//go:build !cgo

package nvml

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoCgo: without cgo the package builds and says so, with the same
// InitError shape the doctor turns into a finding.
func TestNoCgo(t *testing.T) {
	lib, err := ForRoot(t.Context(), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	_, err = ReadGPUs(context.Background(), lib, "/")
	var ie *InitError
	require.ErrorAs(t, err, &ie)
	assert.ErrorIs(t, err, ErrNoCgo)
	assert.Contains(t, ie.Remediation, "CGO_ENABLED=1")
	rep, err := Inspect(context.Background(), Live(), hostRoot(t, "no-peermem"), nil)
	require.NoError(t, err)
	assert.False(t, rep.Available)
	assert.Equal(t, "NVML not in this build", rep.Reason)
	assert.False(t, rep.GDR.Ready, "sysfs reads still work")
	_, err = Capture(context.Background(), Live(), "")
	assert.ErrorIs(t, err, ErrNoCgo)
	// One API in every build (library-2 item 8): "no NVML" is
	// ErrLibraryNotFound here too, and a snapshot has a Library.
	assert.ErrorIs(t, err, ErrLibraryNotFound)
	_, err = ReadGPUs(context.Background(), (&Snapshot{Init: "SUCCESS"}).Library(), "/")
	assert.ErrorIs(t, err, ErrNoCgo)
}

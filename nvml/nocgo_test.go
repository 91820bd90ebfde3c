//go:build !cgo

package nvml

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoCgo: without cgo the package builds and says so for the live
// NVML, with the same InitError shape the doctor turns into a finding; a
// recorded host's NVML replays as in the cgo build (library-3 item 3).
func TestNoCgo(t *testing.T) {
	root := hostRoot(t, "ebmgn8is-healthy")
	lib, err := ForRoot(t.Context(), root)
	require.NoError(t, err)
	gpus, err := ReadGPUs(context.Background(), lib, root)
	require.NoError(t, err, "a recording replays without cgo")
	assert.Len(t, gpus.GPUs, 8)
	snap, err := Capture(context.Background(), lib, "again")
	require.NoError(t, err)
	assert.Len(t, snap.GPUs, 8)
	missing, err := ForRoot(t.Context(), t.TempDir())
	require.NoError(t, err)
	_, err = ReadGPUs(context.Background(), missing, "/")
	assert.ErrorIs(t, err, ErrLibraryNotFound)
	assert.NotErrorIs(t, err, ErrNoCgo, "a recording without nvml.json says so in every build")

	_, err = ReadGPUs(context.Background(), Live(), "/")
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
	assert.NoError(t, err)
}

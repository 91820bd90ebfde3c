//go:build cgo

package nvml

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSnapshotRoundTrip(t *testing.T) {
	// Capture from the hand-configured go-nvml mock, replay the snapshot,
	// and capture again: the same answers both times.
	s1, err := Capture(context.Background(), mockNVML(true), "test")
	require.NoError(t, err)
	require.Len(t, s1.GPUs, 8)
	assert.Equal(t, "00000000:1A:00.0", s1.GPUs[1].PCIBusID)
	var buf bytes.Buffer
	require.NoError(t, s1.Write(&buf))
	s2, err := ReadSnapshot(context.Background(), &buf)
	require.NoError(t, err)
	assert.Equal(t, s1, s2)
	s3, err := Capture(context.Background(), s2.Library(), "test")
	require.NoError(t, err)
	assert.Equal(t, s1, s3)

	live, err := ReadGPUs(context.Background(), mockNVML(true), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	replayed, err := ReadGPUs(context.Background(), s2.Library(), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	for i := range live.GPUs {
		live.GPUs[i].UUID, replayed.GPUs[i].UUID = "", ""
	}
	assert.Equal(t, live, replayed)
}

func TestSnapshotReplaysInitFailure(t *testing.T) {
	lib := mockNVML(true)
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	s, err := Capture(context.Background(), lib, "no driver")
	require.NoError(t, err)
	assert.Equal(t, "ERROR_DRIVER_NOT_LOADED", s.Init)
	_, err = ReadGPUs(context.Background(), s.Library(), t.TempDir())
	assert.ErrorIs(t, err, ErrNoDriver)
}

func TestSnapshotMockOutsideInit(t *testing.T) {
	lib := (&Snapshot{Schema: 1, Init: "SUCCESS", DriverVersion: "535.1"}).Library()
	_, r := lib.DeviceGetCount()
	assert.Equal(t, gonvml.ERROR_UNINITIALIZED, r)
	assert.Equal(t, gonvml.ERROR_UNINITIALIZED, lib.Shutdown())
	require.Equal(t, gonvml.SUCCESS, lib.Init())
	_, r = lib.DeviceGetHandleByIndex(3)
	assert.Equal(t, gonvml.ERROR_INVALID_ARGUMENT, r)
	_, r = lib.SystemGetCudaDriverVersion()
	assert.Equal(t, gonvml.ERROR_NOT_SUPPORTED, r)
}

func TestReadSnapshotErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":      "nvidia-smi: command not found",
		"truncated":     `{"schema":1,"init":"SUCCESS","gpus":[{"name":"H20"`,
		"wrong schema":  `{"schema":2,"init":"SUCCESS","gpus":[]}`,
		"unknown init":  `{"schema":1,"init":"MAYBE","gpus":[]}`,
		"bad bus id":    `{"schema":1,"init":"SUCCESS","gpus":[{"pci_bus_id":"nowhere"}]}`,
		"unknown field": `{"schema":1,"init":"SUCCESS","gpus":[],"gpu_count":8}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadSnapshot(context.Background(), strings.NewReader(in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "NVML snapshot")
		})
	}
}

func TestForRoot(t *testing.T) {
	lib, err := ForRoot(t.Context(), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	g, err := ReadGPUs(context.Background(), lib, hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	assert.Len(t, g.GPUs, 8)

	lib, err = ForRoot(t.Context(), t.TempDir())
	require.NoError(t, err)
	_, err = ReadGPUs(context.Background(), lib, "")
	assert.ErrorIs(t, err, ErrLibraryNotFound, "a recording without nvml.json replays as no NVML")

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "erdmakit"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, SnapshotPath), []byte("{"), 0o644))
	_, err = ForRoot(t.Context(), dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), SnapshotPath)
	assert.False(t, errors.Is(err, os.ErrNotExist))
}

func FuzzReadSnapshot(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(hostRoot(f, "ebmgn8is-healthy"), SnapshotPath))
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"schema":1,"init":"ERROR_DRIVER_NOT_LOADED","gpus":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadSnapshot(context.Background(), bytes.NewReader(b))
		if err != nil {
			return
		}
		// Whatever validates must replay without a panic.
		_, _ = ReadGPUs(context.Background(), s.Library(), t.TempDir())
	})
}

// TestImportersDoNotLinkTheMock: a recorded host replays through
// erdmakit's own types; go-nvml's mock package (a test double) is not linked
// into a program that imports the doctor (library-2 item 1).
func TestImportersDoNotLinkTheMock(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/erdmakit/erdmakit/doctor", "github.com/erdmakit/erdmakit/examples/erdmakit").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "go-nvml/pkg/nvml/mock")
	assert.Contains(t, string(out), "go-nvml/pkg/nvml\n", "the real go-nvml is what replaces it")
}

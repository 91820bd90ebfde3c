//go:build cgo

package nvml

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// TestRecordedGPUsMatchReplay: a build without cgo reads a snapshot
// without go-nvml (Snapshot.recordedGPUs, recapture); here, where the
// replay through go-nvml's types exists, both give the same GPUs, warnings,
// errors and captures for every recorded host's snapshot and for the
// snapshots that take the replay's other branches.
func TestRecordedGPUsMatchReplay(t *testing.T) {
	one, zero, many, neg := 1, 0, 25, -2
	snaps := map[string]*Snapshot{
		"no NUMA answer, no NVLink answer": {Schema: 1, Init: "SUCCESS", DriverVersion: "550.54",
			GPUs: []SnapshotGPU{{Name: "H20", UUID: "GPU-1", PCIBusID: "00000000:17:00.0", NUMANode: &one}, {Name: "H20", PCIBusID: "0000:18:00.0"}}},
		"NVLinks 0, 25, -2; no CUDA": {Schema: 1, Init: "SUCCESS", GPUs: []SnapshotGPU{
			{PCIBusID: "00000000:17:00.0", NUMANode: &one, NVLinks: &zero},
			{PCIBusID: "00000000:18:00.0", NUMANode: &zero, NVLinks: &many},
			{PCIBusID: "00000000:19:00.0", NUMANode: &zero, NVLinks: &neg}}},
		"bad bus id":               {Schema: 1, Init: "SUCCESS", CUDADriverVersion: 12020, GPUs: []SnapshotGPU{{PCIBusID: "nonsense"}, {PCIBusID: "00000000:17:00.0" + strings.Repeat("0", 30)}}},
		"init failed with a note":  {Schema: 1, Init: "ERROR_DRIVER_NOT_LOADED", Note: "no driver on that host"},
		"init failed, no note":     {Schema: 1, Init: "ERROR_LIB_RM_VERSION_MISMATCH"},
		"init not an NVML return":  {Schema: 1, Init: "ERROR_MADE_UP"},
		"no GPUs":                  {Schema: 1, Init: "SUCCESS", DriverVersion: "535"},
		"missing snapshot (stand)": {Init: "ERROR_LIBRARY_NOT_FOUND", Note: "recorded host has no " + SnapshotPath},
	}
	root := fixture.Host(t, "ebmgn8is-healthy")
	mod, err := fixture.ModuleRoot()
	require.NoError(t, err)
	hosts, err := filepath.Glob(filepath.Join(mod, "testdata", "hosts", "*.tar.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, hosts)
	roots := map[string]string{}
	for _, h := range hosts {
		name := strings.TrimSuffix(filepath.Base(h), ".tar.gz")
		r := fixture.Host(t, name)
		roots[name] = r
		s, err := ReadSnapshotFile(t.Context(), filepath.Join(r, SnapshotPath))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err, name)
		snaps[name] = s
	}
	require.Greater(t, len(snaps), 8, "recorded hosts with a snapshot")
	for name, s := range snaps {
		t.Run(name, func(t *testing.T) {
			r := root
			if hr, ok := roots[name]; ok {
				r = hr
			}
			want, wantErr := ReadGPUs(t.Context(), s.Library(), r)
			got, gotErr := s.recordedGPUs(t.Context(), r)
			assert.Equal(t, want, got)
			assert.Equal(t, wantErr, gotErr)
			wantSnap, err := Capture(t.Context(), s.Library(), "again")
			if err == nil {
				assert.Equal(t, wantSnap, s.recapture("again"))
			}
		})
	}
}

// TestReturnNameList: the names a build without cgo accepts are go-nvml's.
func TestReturnNameList(t *testing.T) {
	var names []string
	for _, n := range returnNames {
		names = append(names, n)
	}
	slices.Sort(names)
	list := slices.Clone(returnNameList)
	slices.Sort(list)
	assert.Equal(t, names, list)
}

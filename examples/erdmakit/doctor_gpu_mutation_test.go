package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// TestDoctorGPUFileMutations damages, one at a time, every GPU-side file of
// the healthy fixture (those nvml's gpugen writes: the NVML snapshot, the
// GPUs' PCI tree): the doctor completes with a valid report, never panics,
// and every damage it can see changes a finding or names the file.
func TestDoctorGPUFileMutations(t *testing.T) {
	dir := fixture.Host(t, "ebmgn8is-healthy")
	doctor := func() (*erdma.Report, int) {
		code, out, stderr := runCLI("doctor", "--json", "--root", dir)
		if code == ExitUnknown {
			return nil, code
		}
		var r erdma.Report
		require.NoError(t, json.Unmarshal([]byte(out), &r), "stderr: %s", stderr)
		return &r, code
	}
	base, code := doctor()
	require.Equal(t, ExitOK, code)
	list, err := os.ReadFile(filepath.Join(dir, "erdmakit/gpugen-files.txt"))
	require.NoError(t, err)
	var files []string
	for _, l := range strings.Split(string(list), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, l)); err == nil && fi.Mode().IsRegular() {
			files = append(files, l)
		}
	}
	require.NotEmpty(t, files)
	seen := func(r *erdma.Report, rel string) bool {
		if !reflect.DeepEqual(summaries(base), summaries(r)) {
			return true
		}
		b, _ := json.Marshal(r.Findings)
		return strings.Contains(string(b), filepath.Base(rel))
	}
	var unnoticed []string
	for _, mut := range []string{"remove", "garble"} {
		for _, rel := range files {
			p := filepath.Join(dir, rel)
			orig, err := os.ReadFile(p)
			require.NoError(t, err)
			if mut == "remove" {
				require.NoError(t, os.Remove(p))
			} else {
				require.NoError(t, os.WriteFile(p, []byte{0x00, 0xff, 'x', '\n'}, 0o644))
			}
			var r *erdma.Report
			require.NotPanics(t, func() { r, code = doctor() }, "%s %s", mut, rel)
			require.NoError(t, os.WriteFile(p, orig, 0o644))
			require.NotEqual(t, ExitUnknown, code, "%s %s: the doctor must still report", mut, rel)
			if !seen(r, rel) {
				// Files the doctor does not judge (CPU affinity lists, bridges'
				// ids) may change nothing; the NVML snapshot must.
				require.NotEqual(t, "erdmakit/nvml.json", rel, "%s of the NVML snapshot went unnoticed", mut)
				unnoticed = append(unnoticed, mut+" "+rel)
			}
		}
	}
	t.Logf("%d GPU files x 2 damages, %d unnoticed: %v", len(files), len(unnoticed), unnoticed)
}

func summaries(r *erdma.Report) []string {
	var s []string
	for _, f := range r.Findings {
		s = append(s, string(f.Severity)+" "+f.ID+" "+f.Summary)
	}
	return s
}

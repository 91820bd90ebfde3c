package doctor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
)

// A recording of a recorded host replays the doctor check for check: the
// GPUs (NVML's snapshot) and the DMA-BUF answers come along, not only the
// inventory's files (erdma.RecordFile alone).
func TestRecordReplaysTheDoctor(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{"ebmgn8is-healthy", "no-peermem"} {
		t.Run(name, func(t *testing.T) {
			h, closer, err := erdma.OpenHost(ctx, "../testdata/hosts/"+name+".tar.gz")
			require.NoError(t, err)
			defer closer.Close()
			out := filepath.Join(t.TempDir(), "again.tar.gz")
			var skipped []string
			inv, err := Record(ctx, h, out, RecordOptions{Skipped: func(what string, err error) {
				skipped = append(skipped, what+": "+err.Error())
			}})
			require.NoError(t, err)
			assert.Empty(t, skipped)
			assert.NotEmpty(t, inv.Devices)

			again, closer2, err := erdma.OpenHost(ctx, out)
			require.NoError(t, err)
			defer closer2.Close()
			want, err := Run(ctx, h, DefaultOptions())
			require.NoError(t, err)
			got, err := Run(ctx, again, DefaultOptions())
			require.NoError(t, err)
			require.Equal(t, len(want.Findings), len(got.Findings))
			for i := range want.Findings {
				assert.Equal(t, want.Findings[i].ID, got.Findings[i].ID)
				assert.Equal(t, want.Findings[i].Severity, got.Findings[i].Severity, want.Findings[i].ID)
				assert.Equal(t, want.Findings[i].Summary, got.Findings[i].Summary, want.Findings[i].ID)
			}
			assert.Equal(t, want.Status, got.Status)
		})
	}
}

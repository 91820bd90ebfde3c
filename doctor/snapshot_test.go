package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// What the exporter serves per scrape: the inventory, and the doctor's
// report with the checks the caller adds, each scrape anew.
func TestSnapshotIsTheExportersScrape(t *testing.T) {
	h, closer, err := erdma.OpenHost(t.Context(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	require.NoError(t, err)
	defer closer.Close()

	snap, err := Snapshot(h, SnapshotOptions{InventoryOnly: true})(t.Context())
	require.NoError(t, err)
	assert.Len(t, snap.Inventory.Devices, 2)
	assert.Nil(t, snap.Report)

	scrapes := 0
	extra := Check{ID: "site-policy", Run: func(context.Context, *Input) health.Finding {
		return health.Finding{Severity: health.Warn, Summary: "a site's own check"}
	}}
	f := Snapshot(h, SnapshotOptions{Doctor: DefaultOptions(), ToolsTTL: time.Hour,
		Checks: func(context.Context) []Check { scrapes++; return []Check{extra} }})
	for i := 1; i <= 2; i++ {
		snap, err = f(t.Context())
		require.NoError(t, err)
		require.NotNil(t, snap.Report)
		assert.Equal(t, i, scrapes)
		assert.Equal(t, health.Warn, snap.Report.Status)
		assert.Equal(t, "site-policy", snap.Report.Findings[len(snap.Report.Findings)-1].ID)
	}
}

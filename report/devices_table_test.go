package report_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/report"
)

// TestWriteDevicesTable: the devices table `erdmakit devices` prints,
// drawn by report (the CLI only wires), for a healthy host and a host
// without RDMA devices.
func TestWriteDevicesTable(t *testing.T) {
	for name, want := range map[string][]string{
		"ebmgn8is-healthy": {"DEVICE   DRIVER", "erdma_0", "erdma_1", "modules loaded: ", "memlock: unlimited"},
		"no-erdma-driver":  {"No RDMA devices in ", "attach ERIs", "modules absent: "},
	} {
		t.Run(name, func(t *testing.T) {
			h, closer, err := erdma.OpenHost(t.Context(), fixture.Archive(t, name))
			require.NoError(t, err)
			defer closer.Close()
			inv, err := erdma.ReadInventory(t.Context(), h, erdma.InventoryOptions{SkipCounters: true})
			require.NoError(t, err)
			var b strings.Builder
			require.NoError(t, report.WriteDevicesTable(&b, inv, report.TableOptions{Color: true}))
			for _, w := range want {
				assert.Contains(t, b.String(), w)
			}
			assert.NotContains(t, b.String(), "\x1b[", "no severity words, so no colour")
		})
	}
}

//go:build lab && linux

package perftest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/lab/labtest"
)

// TestLabPerftestLoopback runs the real Debian ib_write_bw pair on the lab's
// rxe0 through the runner and parses both sides.
func TestLabPerftestLoopback(t *testing.T) {
	labtest.Require(t)
	ctx := labtest.Deadline(t)
	runs := RunWriteBW(ctx, Options{Devices: []string{labtest.Device()}, QPs: 2, Size: 4096, Iterations: 2000,
		GIDIndex: labtest.GIDIndex(), Port: 18520, Timeout: 90 * time.Second})
	require.Len(t, runs, 1)
	r := runs[0]
	require.Empty(t, r.Error)
	require.NotNil(t, r.Client)
	assert.True(t, r.Client.OK(), "%+v", r.Client)
	require.NotEmpty(t, r.Client.Results)
	assert.Equal(t, int64(4096), r.Client.Results[0].Bytes)
	assert.Greater(t, r.Client.Results[0].BWAvgGbps, 0.0)
	assert.Equal(t, 2, r.Client.QPs)
	require.NotNil(t, r.Server)
}

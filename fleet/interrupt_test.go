package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

// TestRunDoctorInterruptedHostsAreNotReached: issue 12 item 6. Rank 0
// cancelled while waiting used to report every other host "missing" and
// fail; now they are "not reached", the report says it was interrupted,
// and the status is only what was heard.
func TestRunDoctorInterruptedHostsAreNotReached(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	me, _ := NewRank(0, 3, "test")
	fr, err := RunDoctor(ctx, me, addr, func(context.Context) (*erdma.Report, error) {
		return report(health.OK, ok("mtu-consistent")), nil
	}, Options{Join: 10 * time.Second, Message: 2 * time.Second, Hostname: "gpu0"})
	require.NoError(t, err)
	assert.True(t, fr.Interrupted)
	assert.Equal(t, health.OK, fr.Status)
	assert.Empty(t, fr.ByStatus["missing"])
	assert.Equal(t, []string{"rank 1", "rank 2"}, fr.ByStatus[NotReached])
	require.Len(t, fr.Hosts, 3)
	assert.Equal(t, NotReached, fr.Hosts[1].Status)
}

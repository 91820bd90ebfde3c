//go:build lab

package monitor

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLabCountersMoveDuringWriteTest runs Debian's ib_write_bw server and
// client on the lab's rxe device and checks that stat's sampler sees the
// device's packet counters move by at least the messages sent.
func TestLabCountersMoveDuringWriteTest(t *testing.T) {
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dev := labtest.Device()
	s := HostSampler{Host: erdma.LiveHost(), Devices: []string{dev}}
	before, err := s.Sample(ctx)
	require.NoError(t, err)
	require.Len(t, before.Ports, 1, "the lab's %s", dev)

	gid := strconv.Itoa(labtest.GIDIndex())
	const iters = 2000
	args := []string{"-d", dev, "-x", gid, "-s", "4096", "-n", strconv.Itoa(iters), "-p", "18650", "-F"}
	server := exec.CommandContext(ctx, "ib_write_bw", args...)
	require.NoError(t, server.Start())
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	var out []byte
	for i := 0; i < 20; i++ { // the server needs a moment to listen
		time.Sleep(300 * time.Millisecond)
		out, err = exec.CommandContext(ctx, "ib_write_bw", append(args, labtest.IP())...).CombinedOutput()
		if err == nil {
			break
		}
	}
	require.NoError(t, err, "ib_write_bw client: %s", out)

	after, err := s.Sample(ctx)
	require.NoError(t, err)
	iv := Diff(before, after)
	require.Len(t, iv.Ports, 1)
	p := iv.Ports[0]
	t.Logf("%s: tx %.3f Mpps rx %.3f Mpps over %.1f s; counters %v", dev,
		*p.TxPacketsPerS/1e6, *p.RxPacketsPerS/1e6, iv.Seconds, after.Ports[0].Counters)
	require.NotNil(t, p.TxPacketsPerS, "rxe counts sent_pkts")
	sent := *p.TxPacketsPerS * iv.Seconds
	// One device is both ends: each 4 KiB write is at least one packet
	// (MTU 1024: four) sent and received.
	assert.GreaterOrEqual(t, sent, float64(iters), "packets sent")
	assert.GreaterOrEqual(t, *p.RxPacketsPerS*iv.Seconds, float64(iters), "packets received")
}

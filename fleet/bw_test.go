package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/perf"
)

// A pair test between two BwWorkers over fake links: device i into device i,
// the pair's rate the sum, a device the server lacks named in the error.
func TestBwWorkerPairTestDeviceToNamesake(t *testing.T) {
	cfg := perf.Config{Size: 65536, QPs: 1, Iterations: 50}
	srv := &BwWorker{Links: []perf.Link{perf.NewEmulatedLink("fake0", 2, 0), perf.NewEmulatedLink("fake1", 2, 0)}, Config: cfg}
	port := fixture.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, port, func() { close(ready) }) }()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve never called ready")
	}

	cli := &BwWorker{Links: []perf.Link{perf.NewEmulatedLink("fake0", 2, 0), perf.NewEmulatedLink("fake1", 2, 0)}, Config: cfg}
	res := cli.Client(context.Background(), "127.0.0.1", port)
	assert.Empty(t, res.Error)
	require.Len(t, res.Devices, 2)
	assert.Equal(t, "fake1", res.Devices[1].Name)
	assert.Equal(t, 1, res.Devices[1].Index)
	assert.Greater(t, res.Devices[0].Gbps, 0.0)
	assert.InDelta(t, res.Devices[0].Gbps+res.Devices[1].Gbps, res.Gbps, 1e-9)

	odd := &BwWorker{Links: []perf.Link{perf.NewEmulatedLink("fake0", 2, 0), perf.NewEmulatedLink("other9", 2, 0)}, Config: cfg}
	res = odd.Client(context.Background(), "127.0.0.1", port)
	assert.Contains(t, res.Error, "other9: ")
	assert.NotContains(t, res.Error, "fake0: ")
	assert.Zero(t, res.Devices[1].Gbps)
	assert.Greater(t, res.Gbps, 0.0, "the device that worked still counts")

	cancel()
	err := <-served
	require.Error(t, err, "Serve reports the test that failed")
	assert.Contains(t, err.Error(), "other9")
}

package perf

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveFakes runs a bw server on fake links named names until the test ends.
func serveFakes(t *testing.T, names ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var links []Link
	for _, n := range names {
		links = append(links, newFakeLink(n, 4))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Links: links}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func TestClientsSameDeviceWritesIntoTheNamesakeAndOrdersResults(t *testing.T) {
	addr := serveFakes(t, "fake0", "fake1")
	cs := Clients{Links: []Link{newFakeLink("fake1", 4), newFakeLink("fake0", 4)}, Addr: addr, SameDevice: true,
		Config: Config{QPs: 1, Iterations: 20}}
	results, errs := cs.Run(context.Background(), []int{8192, 4096})
	assert.Equal(t, []error{nil, nil}, errs)
	require.Len(t, results, 4)
	var got [][2]any
	for _, r := range results {
		assert.Equal(t, r.Device, r.ServerDevice)
		got = append(got, [2]any{r.Size, r.Device})
	}
	assert.Equal(t, [][2]any{{4096, "fake0"}, {4096, "fake1"}, {8192, "fake0"}, {8192, "fake1"}}, got)
}

func TestClientsErrorsBelongToTheirLink(t *testing.T) {
	addr := serveFakes(t, "fake0")
	cs := Clients{Links: []Link{newFakeLink("fake0", 4), newFakeLink("nosuch0", 4)}, Addr: addr, SameDevice: true,
		Config: Config{Size: 4096, QPs: 1, Iterations: 20}}
	results, errs := cs.Run(context.Background(), nil)
	require.Len(t, errs, 2)
	assert.NoError(t, errs[0])
	require.Error(t, errs[1])
	assert.Contains(t, errs[1].Error(), "nosuch0")
	require.Len(t, results, 1)
	assert.Equal(t, "fake0", results[0].Device)
}

func TestClientsServerDeviceDefaultsToTheServersFirst(t *testing.T) {
	addr := serveFakes(t, "srv0", "srv1")
	cs := Clients{Links: []Link{newFakeLink("cli0", 4)}, Addr: addr, Config: Config{Size: 4096, QPs: 1, Iterations: 20}}
	results, errs := cs.Run(context.Background(), nil)
	assert.Equal(t, []error{nil}, errs)
	require.Len(t, results, 1)
	assert.Equal(t, "srv0", results[0].ServerDevice)
	cs.ServerDevice = "srv1"
	results, _ = cs.Run(context.Background(), nil)
	require.Len(t, results, 1)
	assert.Equal(t, "srv1", results[0].ServerDevice)
}

// `bw run HOST` on a two-NIC host: each NIC writes into the server's NIC of
// its name, not both into the server's first (which would cap the total at
// one NIC's rate); --server-device still sends every stream into one.
func TestClientsSeveralLinksWriteIntoTheirNamesakes(t *testing.T) {
	addr := serveFakes(t, "erdma_0", "erdma_1")
	cs := Clients{Links: []Link{newFakeLink("erdma_0", 4), newFakeLink("erdma_1", 4)}, Addr: addr,
		Config: Config{Size: 4096, QPs: 1, Iterations: 20}}
	results, errs := cs.Run(context.Background(), nil)
	assert.Equal(t, []error{nil, nil}, errs)
	require.Len(t, results, 2)
	for _, r := range results {
		assert.Equal(t, r.Device, r.ServerDevice)
	}

	cs.ServerDevice = "erdma_1"
	results, errs = cs.Run(context.Background(), nil)
	assert.Equal(t, []error{nil, nil}, errs)
	require.Len(t, results, 2)
	for _, r := range results {
		assert.Equal(t, "erdma_1", r.ServerDevice)
	}

	// A server without the namesake says which devices it serves.
	addr = serveFakes(t, "erdma_0")
	cs = Clients{Links: []Link{newFakeLink("erdma_0", 4), newFakeLink("erdma_1", 4)}, Addr: addr,
		Config: Config{Size: 4096, QPs: 1, Iterations: 20}}
	_, errs = cs.Run(context.Background(), nil)
	assert.NoError(t, errs[0])
	require.Error(t, errs[1])
	assert.Contains(t, errs[1].Error(), `device "erdma_1" is not served here (serving [erdma_0])`)
}

// `bw lat HOST` from two NICs pings the server's NIC of each one's name, one
// after the other, as bw run pairs them. (A fake's ping-pong needs the same
// link object at both ends: a client sent to the server's first NIC instead
// would stall, as it would against another host's wrong NIC.)
func TestLatencyClientsSeveralLinksPingTheirNamesakes(t *testing.T) {
	e0, e1 := newFakeLink("erdma_0", 4), newFakeLink("erdma_1", 4)
	addr, tests := startServer(t, 2*time.Second, e0, e1)
	cfg := LatencyConfig{Iterations: 20, Warmup: -1}
	results, errs := RunLatencyClients(context.Background(), []Link{e1, e0}, addr, "", cfg, []int{2})
	assert.Empty(t, errs)
	require.Len(t, results, 2)
	for i, r := range results {
		assert.Equal(t, []string{"erdma_0", "erdma_1"}[i], r.Device, "ordered by device")
		assert.Equal(t, r.Device, r.ServerDevice)
	}
	for _, want := range []string{"erdma_1", "erdma_0"} { // one after the other, in the links' order
		st := <-tests
		require.NoError(t, st.Err)
		assert.Equal(t, want, st.Device)
	}
}

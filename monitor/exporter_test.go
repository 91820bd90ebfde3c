package monitor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSnapshot() *Snapshot {
	inv := &erdma.Inventory{
		Devices: []erdma.Device{{
			Name: "erdma_0", Driver: "erdma", ERDMA: true, Transport: erdma.TransportRoCE,
			PCIAddress: "0000:00:05.0", NodeGUID: "0216:3eff:fe2f:3775", Netdev: "eth1",
			Ports: []erdma.Port{{Number: 1, State: "ACTIVE", StateCode: 4,
				Counters: map[string]uint64{"hw_tx_bytes_cnt": 12345, "hw_bps_limit_drop_cnt": 2}}},
		}},
		Netdevs: []erdma.Netdev{{Name: "eth1", MTU: 8500, OperState: "up"}},
	}
	rep := &erdma.Report{Status: health.Fail, Findings: []health.Finding{
		{ID: "port-active", Severity: health.OK},
		{ID: "gdr-peermem", Severity: health.Fail},
		{ID: "gpu-driver", Severity: health.Skip},
	}}
	return &Snapshot{Inventory: inv, Report: rep}
}

func TestCollectorMetrics(t *testing.T) {
	c := NewCollector(func(context.Context) (*Snapshot, error) { return testSnapshot(), nil }, time.Second)
	want := `
# HELP erdmakit_doctor_check Result of one erdmakit doctor check: 0 ok, 1 warn, 2 fail, -1 skip.
# TYPE erdmakit_doctor_check gauge
erdmakit_doctor_check{id="gdr-peermem"} 2
erdmakit_doctor_check{id="gpu-driver"} -1
erdmakit_doctor_check{id="port-active"} 0
# HELP erdmakit_netdev_mtu_bytes MTU of the netdev paired with an RDMA device.
# TYPE erdmakit_netdev_mtu_bytes gauge
erdmakit_netdev_mtu_bytes{device="erdma_0",netdev="eth1"} 8500
# HELP erdmakit_port_active 1 when the port is ACTIVE.
# TYPE erdmakit_port_active gauge
erdmakit_port_active{device="erdma_0",port="1"} 1
# HELP erdmakit_port_stat_total hw_counters value, named as the driver names it.
# TYPE erdmakit_port_stat_total counter
erdmakit_port_stat_total{device="erdma_0",port="1",stat="hw_bps_limit_drop_cnt"} 2
erdmakit_port_stat_total{device="erdma_0",port="1",stat="hw_tx_bytes_cnt"} 12345
# HELP erdmakit_up 1 when the last scrape read the host without error.
# TYPE erdmakit_up gauge
erdmakit_up 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"erdmakit_doctor_check", "erdmakit_netdev_mtu_bytes", "erdmakit_port_active", "erdmakit_port_stat_total", "erdmakit_up"))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestCollectorReadFailureIsUpZero(t *testing.T) {
	c := NewCollector(func(context.Context) (*Snapshot, error) { return nil, errors.New("sysfs gone") }, time.Second)
	want := "# HELP erdmakit_up 1 when the last scrape read the host without error.\n# TYPE erdmakit_up gauge\nerdmakit_up 0\n"
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "erdmakit_up"))
}

func TestServeOverLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := NewCollector(func(context.Context) (*Snapshot, error) { return testSnapshot(), nil }, time.Second)
	go func() { done <- Serve(ctx, l, c) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `erdmakit_port_stat_total{device="erdma_0",port="1",stat="hw_tx_bytes_cnt"} 12345`)
	assert.Contains(t, string(body), `erdmakit_doctor_status 2`)

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

package monitor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func sample(at time.Duration, ports ...PortSample) *Sample {
	return &Sample{Time: t0.Add(at), Ports: ports}
}

func port(dev, state string, c map[string]uint64) PortSample {
	return PortSample{Device: dev, Port: 1, ERDMA: true, State: state, Counters: c}
}

func TestDiffRatesOutOfTreeNames(t *testing.T) {
	a := sample(0, port("erdma_0", "ACTIVE", map[string]uint64{
		"hw_tx_bytes_cnt": 1000, "hw_rx_bytes_cnt": 0, "hw_tx_packets_cnt": 10, "hw_rx_packets_cnt": 5,
		"hw_bps_limit_drop_cnt": 7, "connect_success_cnt": 1,
	}))
	b := sample(2*time.Second, port("erdma_0", "ACTIVE", map[string]uint64{
		"hw_tx_bytes_cnt": 1000 + 25e9, "hw_rx_bytes_cnt": 5e9, "hw_tx_packets_cnt": 10 + 4000, "hw_rx_packets_cnt": 5,
		"hw_bps_limit_drop_cnt": 9, "connect_success_cnt": 2,
	}))
	iv := Diff(a, b)
	require.Len(t, iv.Ports, 1)
	p := iv.Ports[0]
	assert.InDelta(t, 100.0, Gbps(p.TxBytesPerS), 1e-9, "25e9 bytes in 2 s is 100 Gbit/s")
	assert.InDelta(t, 20.0, Gbps(p.RxBytesPerS), 1e-9)
	assert.InDelta(t, 2000.0, *p.TxPacketsPerS, 1e-9)
	assert.InDelta(t, 0.0, *p.RxPacketsPerS, 1e-9)
	assert.Equal(t, []CounterMove{{Name: "hw_bps_limit_drop_cnt", Delta: 2}}, p.Moved, "only problem counters are listed")
	assert.Empty(t, p.Resets)
	assert.Empty(t, p.StateBefore)
}

func TestDiffRatesUpstreamNames(t *testing.T) {
	a := sample(0, port("erdma_0", "ACTIVE", map[string]uint64{"tx_bytes_cnt": 0, "rx_bytes_cnt": 0, "rx_pps_limit_drop_cnt": 0}))
	b := sample(time.Second, port("erdma_0", "ACTIVE", map[string]uint64{"tx_bytes_cnt": 125e6, "rx_bytes_cnt": 0, "rx_pps_limit_drop_cnt": 3}))
	p := Diff(a, b).Ports[0]
	assert.InDelta(t, 1.0, Gbps(p.TxBytesPerS), 1e-9)
	assert.Nil(t, p.TxPacketsPerS, "no packet counter: no rate, not a zero rate")
	assert.Equal(t, []CounterMove{{Name: "rx_pps_limit_drop_cnt", Delta: 3}}, p.Moved)
}

func TestDiffWrapAndReset(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur uint64
		want      uint64
		reset     bool
	}{
		{"grows", 10, 15, 5, false},
		{"32-bit wrap", 1<<32 - 100, 50, 150, false},
		{"reset to small value", 5_000_000_000_000, 1000, 1000, true},
		{"reset from a small value", 10_000, 3, 3, true},
		{"unchanged", 42, 42, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := sample(0, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": tc.prev}))
			b := sample(time.Second, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": tc.cur}))
			p := Diff(a, b).Ports[0]
			assert.InDelta(t, float64(tc.want), *p.TxBytesPerS, 1e-9)
			if tc.reset {
				assert.Equal(t, []string{"hw_tx_bytes_cnt"}, p.Resets)
			} else {
				assert.Empty(t, p.Resets)
			}
			assert.GreaterOrEqual(t, *p.TxBytesPerS, 0.0, "never negative")
		})
	}
}

func TestDiffStateChangeAndDeviceChurn(t *testing.T) {
	a := sample(0,
		port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 1}),
		port("erdma_1", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 1}))
	b := sample(time.Second,
		port("erdma_0", "DOWN", map[string]uint64{"hw_tx_bytes_cnt": 1}),
		port("erdma_2", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 1}))
	iv := Diff(a, b)
	require.Len(t, iv.Ports, 1)
	assert.Equal(t, "DOWN", iv.Ports[0].State)
	assert.Equal(t, "ACTIVE", iv.Ports[0].StateBefore)
	assert.Equal(t, []string{"erdma_1/1"}, iv.Gone)
	assert.Equal(t, []string{"erdma_2/1"}, iv.Appeared)
}

func TestDiffZeroIntervalHasNoRates(t *testing.T) {
	a := sample(0, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 1}))
	b := sample(0, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 100}))
	assert.Nil(t, Diff(a, b).Ports[0].TxBytesPerS)
}

func TestIsProblemCounter(t *testing.T) {
	for _, n := range []string{"hw_bps_limit_drop_cnt", "hw_rx_pps_limit_drop_cnt", "connect_failed_cnt",
		"connect_timeout_cnt", "verbs_reg_usr_mr_failed_cnt", "reject_cnt", "connect_reset_cnt"} {
		assert.True(t, IsProblemCounter(n), n)
	}
	for _, n := range []string{"hw_tx_bytes_cnt", "rx_packets_cnt", "connect_success_cnt", "cmdq_submitted_cnt"} {
		assert.False(t, IsProblemCounter(n), n)
	}
}

// TestPortRatesPrint: issue 26 item 5. A rate the device has no counter
// for is nil (the JSON leaves it out): %v prints "-", never an address.
func TestPortRatesPrint(t *testing.T) {
	tx, pps := 1.25e9/8, 1000.0
	r := PortRates{Device: "erdma_0", Port: 1, State: "ACTIVE", TxBytesPerS: &tx, TxPacketsPerS: &pps}
	assert.Equal(t, "erdma_0/1 ACTIVE: tx 1.25 Gbit/s 1000 pkt/s, rx - -", fmt.Sprintf("%v", r))
}

package monitor

import (
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
)

// counters is a port's hw_counters in a table of cases.
type counters = map[string]uint64

// TestIntervalProblems: what a health check flags in an interval, and what
// it does not.
func TestIntervalProblems(t *testing.T) {
	// many are a busy port's counters; reload the same after a driver
	// reload: every one back to zero.
	many := counters{"hw_tx_bytes_cnt": 9e12, "hw_rx_bytes_cnt": 8e12, "hw_tx_packets_cnt": 7e9,
		"hw_rx_packets_cnt": 6e9, "connect_success_cnt": 5e4}
	reload := counters{"hw_tx_bytes_cnt": 0, "hw_rx_bytes_cnt": 0, "hw_tx_packets_cnt": 0,
		"hw_rx_packets_cnt": 0, "connect_success_cnt": 0}
	tests := []struct {
		name      string
		prev, cur []PortSample
		want      []string
	}{
		{name: "traffic only",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 0, "connect_success_cnt": 1})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 1e9, "connect_success_cnt": 9})}},
		{name: "problem counter that did not move",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_bps_limit_drop_cnt": 7})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"hw_bps_limit_drop_cnt": 7})}},
		{name: "problem counters moved",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_bps_limit_drop_cnt": 7, "connect_timeout_cnt": 0})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"hw_bps_limit_drop_cnt": 19, "connect_timeout_cnt": 2})},
			want: []string{"erdma_0/1: connect_timeout_cnt +2", "erdma_0/1: hw_bps_limit_drop_cnt +12"}},
		{name: "port went down",
			prev: []PortSample{port("erdma_0", "ACTIVE", nil)},
			cur:  []PortSample{port("erdma_0", "DOWN", nil)},
			want: []string{"erdma_0/1: state ACTIVE -> DOWN"}},
		{name: "port came up: it was not up the whole interval",
			prev: []PortSample{port("erdma_0", "DOWN", nil)},
			cur:  []PortSample{port("erdma_0", "ACTIVE", nil)},
			want: []string{"erdma_0/1: state DOWN -> ACTIVE"}},
		{name: "port down throughout: no change, the doctor's to judge",
			prev: []PortSample{port("erdma_0", "DOWN", nil)},
			cur:  []PortSample{port("erdma_0", "DOWN", nil)}},
		{name: "a counter reset",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 10_000})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 3})},
			want: []string{"erdma_0/1: counters reset (driver reload or device reset): hw_tx_bytes_cnt"}},
		{name: "driver reload resets every counter: three named",
			prev: []PortSample{port("erdma_0", "ACTIVE", many)},
			cur:  []PortSample{port("erdma_0", "ACTIVE", reload)},
			want: []string{"erdma_0/1: counters reset (driver reload or device reset): connect_success_cnt, hw_rx_bytes_cnt, hw_rx_packets_cnt and 2 more"}},
		{name: "32-bit wrap is not a reset",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 1<<32 - 100})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"hw_tx_bytes_cnt": 50})}},
		{name: "a reset problem counter that counted again is also moved",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"connect_failed_cnt": 40})},
			cur:  []PortSample{port("erdma_0", "ACTIVE", counters{"connect_failed_cnt": 2})},
			want: []string{"erdma_0/1: connect_failed_cnt +2",
				"erdma_0/1: counters reset (driver reload or device reset): connect_failed_cnt"}},
		{name: "device gone",
			prev: []PortSample{port("erdma_0", "ACTIVE", nil), port("erdma_1", "ACTIVE", nil)},
			cur:  []PortSample{port("erdma_0", "ACTIVE", nil)},
			want: []string{"erdma_1/1: gone"}},
		{name: "every device gone",
			prev: []PortSample{port("erdma_0", "ACTIVE", nil), port("erdma_1", "ACTIVE", nil)},
			want: []string{"erdma_0/1: gone", "erdma_1/1: gone"}},
		{name: "device appeared",
			prev: []PortSample{port("erdma_0", "ACTIVE", nil)},
			cur:  []PortSample{port("erdma_0", "ACTIVE", nil), port("erdma_1", "DOWN", nil)}},
		{name: "everything at once, ports in order then gone",
			prev: []PortSample{port("erdma_0", "ACTIVE", counters{"hw_rx_pps_limit_drop_cnt": 0, "hw_tx_bytes_cnt": 5000}),
				port("erdma_1", "ACTIVE", nil), port("erdma_2", "ACTIVE", counters{"verbs_create_qp_failed_cnt": 0})},
			cur: []PortSample{port("erdma_0", "DOWN", counters{"hw_rx_pps_limit_drop_cnt": 1, "hw_tx_bytes_cnt": 4}),
				port("erdma_2", "ACTIVE", counters{"verbs_create_qp_failed_cnt": 3}), port("erdma_3", "ACTIVE", nil)},
			want: []string{"erdma_0/1: state ACTIVE -> DOWN", "erdma_0/1: hw_rx_pps_limit_drop_cnt +1",
				"erdma_0/1: counters reset (driver reload or device reset): hw_tx_bytes_cnt",
				"erdma_2/1: verbs_create_qp_failed_cnt +3", "erdma_1/1: gone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			iv := Diff(sample(0, tc.prev...), sample(time.Second, tc.cur...))
			assert.Equal(t, tc.want, iv.Problems())
			wantSev := health.OK
			if len(tc.want) > 0 {
				wantSev = health.Warn
			}
			assert.Equal(t, wantSev, iv.Severity())
		})
	}
}

// TestIntervalZeroValueHasNoProblems: an Interval that was not from Diff
// (nil lists) is healthy, not a panic.
func TestIntervalZeroValueHasNoProblems(t *testing.T) {
	assert.Empty(t, Interval{}.Problems())
	assert.Equal(t, health.OK, Interval{}.Severity())
}

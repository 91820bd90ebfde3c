package erdma

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsLimitDrop(t *testing.T) {
	for _, n := range []string{"hw_bps_limit_drop_cnt", "hw_pps_limit_drop_cnt", "hw_rx_bps_limit_drop_cnt", "rx_pps_limit_drop_cnt", "tx_bps_limit_drop_cnt"} {
		assert.True(t, IsLimitDrop(n), n)
	}
	assert.False(t, IsLimitDrop("hw_disable_drop_cnt"))
	assert.False(t, IsLimitDrop("hw_tx_bytes_cnt"))
}

func TestTrafficCounterNamesCoverBothDrivers(t *testing.T) {
	n := TrafficCounterNames()
	assert.Equal(t, "hw_tx_bytes_cnt", n.TxBytes[0], "the out-of-tree name first")
	assert.Contains(t, n.TxBytes, "tx_bytes_cnt")
	assert.Contains(t, n.RxBytes, "rx_bytes_cnt")
	assert.Contains(t, n.TxPackets, "sent_pkts")
	assert.Contains(t, n.RxPackets, "rcvd_pkts")
}

package monitor

import "strings"

// Traffic counter names. The out-of-tree eRDMA driver prefixes its hardware
// counters with "hw_", the in-kernel driver does not; mlx5-style and rxe
// devices have their own names. The first name present wins.
var (
	txBytesNames = []string{"hw_tx_bytes_cnt", "tx_bytes_cnt"}
	rxBytesNames = []string{"hw_rx_bytes_cnt", "rx_bytes_cnt"}
	txPktsNames  = []string{"hw_tx_packets_cnt", "tx_packets_cnt", "sent_pkts"}
	rxPktsNames  = []string{"hw_rx_packets_cnt", "rx_packets_cnt", "rcvd_pkts"}
)

// lookup returns the value of the first name present in c.
func lookup(c map[string]uint64, names []string) (uint64, string, bool) {
	for _, n := range names {
		if v, ok := c[n]; ok {
			return v, n, true
		}
	}
	return 0, "", false
}

// IsProblemCounter reports whether a counter counts something going wrong:
// drops by the instance's bandwidth/PPS meter, CM connect failures and
// timeouts, verbs failures. A problem counter that moves is worth a line.
func IsProblemCounter(name string) bool {
	for _, s := range []string{"drop", "fail", "timeout", "reject", "reset", "err", "retry", "discard"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// IsLimitDrop reports whether a counter counts drops by the instance's
// bandwidth or packet-rate meter (the *_limit_drop_cnt family).
func IsLimitDrop(name string) bool {
	return strings.HasSuffix(name, "_limit_drop_cnt")
}

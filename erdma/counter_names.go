package erdma

// TrafficCounters are the hw_counters that count a port's traffic, each
// list in order of preference (the first name present wins): the
// out-of-tree eRDMA driver prefixes its names with "hw_", the in-kernel driver
// does not, and rxe counts packets only (sent_pkts, rcvd_pkts).
type TrafficCounters struct {
	TxBytes, RxBytes, TxPackets, RxPackets []string
}

// TrafficCounterNames returns the traffic counter names every reader of
// counters (the doctor, `bw`'s counter proof, `stat`, the exporter) uses.
func TrafficCounterNames() TrafficCounters {
	return TrafficCounters{
		TxBytes:   []string{"hw_tx_bytes_cnt", "tx_bytes_cnt", "tx_bytes"},
		RxBytes:   []string{"hw_rx_bytes_cnt", "rx_bytes_cnt", "rx_bytes"},
		TxPackets: []string{"hw_tx_packets_cnt", "tx_packets_cnt", "tx_pkts_cnt", "sent_pkts"},
		RxPackets: []string{"hw_rx_packets_cnt", "rx_packets_cnt", "rx_pkts_cnt", "rcvd_pkts"},
	}
}

package perf

import "github.com/erdmakit/erdmakit/erdma"

// CounterDelta returns after - before for every counter in both (a counter
// that went backwards, a reset, is left out).
func CounterDelta(before, after map[string]uint64) map[string]uint64 {
	if before == nil || after == nil {
		return nil
	}
	d := make(map[string]uint64, len(after))
	for k, a := range after {
		if b, ok := before[k]; ok && a >= b {
			d[k] = a - b
		}
	}
	return d
}

// CounterProof says whether a device counter moved by at least what the
// test wrote: the evidence that the traffic went over RDMA.
type CounterProof struct {
	// Counter is the counter used ("hw_tx_bytes_cnt", "sent_pkts").
	Counter string `json:"counter"`
	// Unit is "bytes" or "packets".
	Unit string `json:"unit"`
	// Delta is the counter's change over the test; Want the least it must be
	// (the bytes written, or one packet per write).
	Delta uint64 `json:"delta"`
	Want  uint64 `json:"want"`
	OK    bool   `json:"ok"`
}

// proveTX checks a transmit-side delta against the writes of a test: a
// byte counter must move by at least bytes, a packet counter by at least
// one per message. nil when the device has neither.
func proveTX(delta map[string]uint64, bytes, msgs uint64) *CounterProof {
	names := erdma.TrafficCounterNames()
	return prove(delta, names.TxBytes, names.TxPackets, bytes, msgs)
}

// proveRX is proveTX for the receiving side.
func proveRX(delta map[string]uint64, bytes, msgs uint64) *CounterProof {
	names := erdma.TrafficCounterNames()
	return prove(delta, names.RxBytes, names.RxPackets, bytes, msgs)
}

func prove(delta map[string]uint64, byteNames, pktNames []string, bytes, msgs uint64) *CounterProof {
	for _, n := range byteNames {
		if v, ok := delta[n]; ok {
			return &CounterProof{Counter: n, Unit: "bytes", Delta: v, Want: bytes, OK: v >= bytes}
		}
	}
	for _, n := range pktNames {
		if v, ok := delta[n]; ok {
			return &CounterProof{Counter: n, Unit: "packets", Delta: v, Want: msgs, OK: v >= msgs}
		}
	}
	return nil
}

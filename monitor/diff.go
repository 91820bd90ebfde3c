package monitor

import (
	"sort"
	"strconv"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// wrap32 is the width at which 32-bit hardware counters wrap. A counter that
// goes backwards from near this value to a small one wrapped; anything else
// that goes backwards was reset.
const wrap32 = 1 << 32

// Interval is what changed between two samples.
type Interval struct {
	Start    time.Time   `json:"start"`
	End      time.Time   `json:"end"`
	Seconds  float64     `json:"seconds"`
	Ports    []PortRates `json:"ports"`
	Appeared []string    `json:"appeared"` // "erdma_1/1": ports new in this interval
	Gone     []string    `json:"gone"`     // ports that disappeared
}

// PortRates is one port's traffic and events over an interval. Rates are nil
// where the device has no such counter.
type PortRates struct {
	Device        string   `json:"device"`
	Port          int      `json:"port"`
	State         string   `json:"state"`
	StateBefore   string   `json:"state_before,omitempty"` // set when the state changed
	TxBytesPerS   *float64 `json:"tx_bytes_per_s,omitempty"`
	RxBytesPerS   *float64 `json:"rx_bytes_per_s,omitempty"`
	TxPacketsPerS *float64 `json:"tx_packets_per_s,omitempty"`
	RxPacketsPerS *float64 `json:"rx_packets_per_s,omitempty"`
	// Moved are the problem counters (drops, failures, timeouts) that grew.
	Moved []CounterMove `json:"moved"`
	// Resets names counters that went backwards other than by a 32-bit wrap
	// (driver reload, device reset): their delta is taken from zero.
	Resets []string `json:"resets"`
}

// CounterMove is a counter's growth over the interval.
type CounterMove struct {
	Name  string `json:"name"`
	Delta uint64 `json:"delta"`
}

// Gbps returns a bytes-per-second rate as Gbit/s (10^9 bit/s), 0 for nil.
func Gbps(bytesPerS *float64) float64 {
	if bytesPerS == nil {
		return 0
	}
	return *bytesPerS * 8 / 1e9
}

// delta returns how much a counter grew from prev to cur, telling a 32-bit
// wrap from a reset. reset reports the latter.
func delta(prev, cur uint64) (d uint64, reset bool) {
	if cur >= prev {
		return cur - prev, false
	}
	if prev < wrap32 && prev >= wrap32/2 && cur < wrap32/2 {
		return cur + wrap32 - prev, false
	}
	return cur, true
}

// Diff compares two samples of the same host. Ports are matched by device and
// port number; a port present in only one sample is listed as appeared or
// gone, without rates. A non-positive interval yields no rates.
func Diff(prev, cur *Sample) Interval {
	// Lists are [] when empty, never null (the documented JSON).
	iv := Interval{Start: prev.Time, End: cur.Time, Seconds: cur.Time.Sub(prev.Time).Seconds(),
		Ports: []PortRates{}, Appeared: []string{}, Gone: []string{}}
	before := make(map[PortKey]*PortSample, len(prev.Ports))
	for i := range prev.Ports {
		before[prev.Ports[i].Key()] = &prev.Ports[i]
	}
	seen := make(map[PortKey]bool, len(cur.Ports))
	for i := range cur.Ports {
		p := &cur.Ports[i]
		seen[p.Key()] = true
		b, ok := before[p.Key()]
		if !ok {
			iv.Appeared = append(iv.Appeared, portName(p.Key()))
			continue
		}
		iv.Ports = append(iv.Ports, portRates(b, p, iv.Seconds))
	}
	for k := range before {
		if !seen[k] {
			iv.Gone = append(iv.Gone, portName(k))
		}
	}
	sort.Strings(iv.Gone)
	return iv
}

func portRates(b, p *PortSample, secs float64) PortRates {
	r := PortRates{Device: p.Device, Port: p.Port, State: p.State, Moved: []CounterMove{}, Resets: []string{}}
	if b.State != p.State {
		r.StateBefore = b.State
	}
	names := make([]string, 0, len(p.Counters))
	for n := range p.Counters {
		names = append(names, n)
	}
	sort.Strings(names)
	deltas := make(map[string]uint64, len(names))
	for _, n := range names {
		old, ok := b.Counters[n]
		if !ok {
			continue
		}
		d, reset := delta(old, p.Counters[n])
		deltas[n] = d
		if reset {
			r.Resets = append(r.Resets, n)
		}
		if d > 0 && IsProblemCounter(n) {
			r.Moved = append(r.Moved, CounterMove{Name: n, Delta: d})
		}
	}
	if secs > 0 {
		names := erdma.TrafficCounterNames()
		r.TxBytesPerS = rate(deltas, names.TxBytes, secs)
		r.RxBytesPerS = rate(deltas, names.RxBytes, secs)
		r.TxPacketsPerS = rate(deltas, names.TxPackets, secs)
		r.RxPacketsPerS = rate(deltas, names.RxPackets, secs)
	}
	return r
}

func rate(deltas map[string]uint64, names []string, secs float64) *float64 {
	d, _, ok := lookup(deltas, names)
	if !ok {
		return nil
	}
	v := float64(d) / secs
	return &v
}

func portName(k PortKey) string {
	return k.Device + "/" + strconv.Itoa(k.Port)
}

// String is the port's rates on one line ("erdma_0/1 ACTIVE: tx 1.25
// Gbit/s 1000 pkt/s, rx - -"), "-" where the device has no such counter:
// %v of a PortRates printed the optional rates' addresses.
func (p PortRates) String() string {
	rate := func(r *float64, unit func(float64) string) string {
		if r == nil {
			return "-"
		}
		return unit(*r)
	}
	gbps := func(v float64) string { return strconv.FormatFloat(v*8/1e9, 'f', 2, 64) + " Gbit/s" }
	pps := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " pkt/s" }
	return p.Device + "/" + strconv.Itoa(p.Port) + " " + p.State +
		": tx " + rate(p.TxBytesPerS, gbps) + " " + rate(p.TxPacketsPerS, pps) +
		", rx " + rate(p.RxBytesPerS, gbps) + " " + rate(p.RxPacketsPerS, pps)
}

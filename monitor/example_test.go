package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/monitor"
)

// Two readings of an eRDMA port one second apart become rates; the meter's
// drop counter that moved is reported.
func ExampleDiff() {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	before := &monitor.Sample{Time: t0, Ports: []monitor.PortSample{{
		Device: "erdma_0", Port: 1, State: "ACTIVE",
		Counters: map[string]uint64{"hw_tx_bytes_cnt": 0, "hw_tx_packets_cnt": 0, "hw_bps_limit_drop_cnt": 3},
	}}}
	after := &monitor.Sample{Time: t0.Add(time.Second), Ports: []monitor.PortSample{{
		Device: "erdma_0", Port: 1, State: "ACTIVE",
		Counters: map[string]uint64{"hw_tx_bytes_cnt": 12_500_000_000, "hw_tx_packets_cnt": 3_000_000, "hw_bps_limit_drop_cnt": 10},
	}}}
	iv := monitor.Diff(before, after)
	p := iv.Ports[0]
	fmt.Printf("%s/%d tx %.1f Gbit/s, %.1f Mpps\n", p.Device, p.Port, monitor.Gbps(p.TxBytesPerS), *p.TxPacketsPerS/1e6)
	for _, m := range p.Moved {
		fmt.Printf("%s +%d\n", m.Name, m.Delta)
	}
	// Output:
	// erdma_0/1 tx 100.0 Gbit/s, 3.0 Mpps
	// hw_bps_limit_drop_cnt +7
}

// A health check's verdict on an interval: the meter dropped packets on
// erdma_0, erdma_1 disappeared (erdma_2 appearing is no problem). Severity
// is the same rule as a status: warn, exit 1.
func ExampleInterval_Problems() {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	port := func(dev string, drops uint64) monitor.PortSample {
		return monitor.PortSample{Device: dev, Port: 1, State: "ACTIVE",
			Counters: map[string]uint64{"hw_bps_limit_drop_cnt": drops}}
	}
	before := &monitor.Sample{Time: t0, Ports: []monitor.PortSample{port("erdma_0", 3), port("erdma_1", 0)}}
	after := &monitor.Sample{Time: t0.Add(time.Second), Ports: []monitor.PortSample{port("erdma_0", 10), port("erdma_2", 0)}}
	iv := monitor.Diff(before, after)
	for _, p := range iv.Problems() {
		fmt.Println(p)
	}
	fmt.Println(iv.Severity(), iv.Severity().Exit())
	// Output:
	// erdma_0/1: hw_bps_limit_drop_cnt +7
	// erdma_1/1: gone
	// warn 1
}

// A device name given by a user is checked before watching: Sample itself
// tolerates devices that come and go.
func ExampleHostSampler_CheckDevices() {
	h, closer, err := erdma.OpenHost(context.Background(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closer.Close()
	s := monitor.HostSampler{Host: h, Devices: []string{"erdma_9"}}
	err = s.CheckDevices(context.Background())
	fmt.Println(errors.Is(err, monitor.ErrNoSuchDevice), err)
	// Output: true no such RDMA device: erdma_9 (the host has erdma_0, erdma_1)
}

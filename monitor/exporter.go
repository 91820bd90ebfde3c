package monitor

import (
	"context"
	"strconv"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is what one scrape reads: the inventory (devices, ports, counters,
// netdevs) and, when available, the doctor's report on it.
type Snapshot struct {
	Inventory *erdma.Inventory
	Report    *erdma.Report // nil when the doctor is not run
}

// SnapshotFunc reads a Snapshot; the exporter calls it once per scrape.
type SnapshotFunc func(ctx context.Context) (*Snapshot, error)

// Collector is a prometheus.Collector that reads the host on every scrape.
type Collector struct {
	snap    SnapshotFunc
	timeout time.Duration

	deviceInfo, portState, portActive, counter *prometheus.Desc
	netdevMTU, netdevUp, check, status         *prometheus.Desc
	up, duration                               *prometheus.Desc
}

// NewCollector returns a collector over snap; each scrape is bounded by
// timeout (0 means 10 s).
func NewCollector(snap SnapshotFunc, timeout time.Duration) *Collector {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("erdmakit_"+name, help, labels, nil)
	}
	return &Collector{
		snap:       snap,
		timeout:    timeout,
		deviceInfo: d("device_info", "RDMA device identity; value is always 1.", "device", "driver", "erdma", "transport", "pci_address", "netdev", "node_guid", "fw_ver"),
		portState:  d("port_state", "Port state code as in sysfs (4 = ACTIVE).", "device", "port", "state"),
		portActive: d("port_active", "1 when the port is ACTIVE.", "device", "port"),
		counter:    d("port_stat_total", "hw_counters value, named as the driver names it.", "device", "port", "stat"),
		netdevMTU:  d("netdev_mtu_bytes", "MTU of the netdev paired with an RDMA device.", "device", "netdev"),
		netdevUp:   d("netdev_up", "1 when the paired netdev's operstate is up.", "device", "netdev"),
		check:      d("doctor_check", "Doctor check result: 0 ok, 1 warn, 2 fail, -1 skip.", "id"),
		status:     d("doctor_status", "Doctor overall status: 0 ok, 1 warn, 2 fail."),
		up:         d("up", "1 when the last scrape read the host without error."),
		duration:   d("scrape_duration_seconds", "Time the last scrape took to read the host."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.deviceInfo, c.portState, c.portActive, c.counter,
		c.netdevMTU, c.netdevUp, c.check, c.status, c.up, c.duration} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the host now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	snap, err := c.snap(ctx)
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil || snap == nil || snap.Inventory == nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	netdevs := make(map[string]erdma.Netdev, len(snap.Inventory.Netdevs))
	for _, n := range snap.Inventory.Netdevs {
		netdevs[n.Name] = n
	}
	for _, d := range snap.Inventory.Devices {
		ch <- prometheus.MustNewConstMetric(c.deviceInfo, prometheus.GaugeValue, 1,
			d.Name, d.Driver, strconv.FormatBool(d.ERDMA), string(d.Transport), d.PCIAddress, d.Netdev, d.NodeGUID, d.FWVer)
		for _, p := range d.Ports {
			port := strconv.Itoa(p.Number)
			ch <- prometheus.MustNewConstMetric(c.portState, prometheus.GaugeValue, float64(p.StateCode), d.Name, port, p.State)
			ch <- prometheus.MustNewConstMetric(c.portActive, prometheus.GaugeValue, boolValue(p.StateCode == 4), d.Name, port)
			for name, v := range p.Counters {
				ch <- prometheus.MustNewConstMetric(c.counter, prometheus.CounterValue, float64(v), d.Name, port, name)
			}
		}
		if n, ok := netdevs[d.Netdev]; ok {
			ch <- prometheus.MustNewConstMetric(c.netdevMTU, prometheus.GaugeValue, float64(n.MTU), d.Name, n.Name)
			ch <- prometheus.MustNewConstMetric(c.netdevUp, prometheus.GaugeValue, boolValue(n.OperState == "up"), d.Name, n.Name)
		}
	}
	if snap.Report != nil {
		for _, f := range snap.Report.Findings {
			ch <- prometheus.MustNewConstMetric(c.check, prometheus.GaugeValue, float64(erdma.PromValue(f.Severity)), f.ID)
		}
		ch <- prometheus.MustNewConstMetric(c.status, prometheus.GaugeValue, float64(erdma.PromValue(snap.Report.Status)))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

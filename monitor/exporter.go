package monitor

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is what one scrape reads: the inventory (devices, ports, counters,
// netdevs) and, when available, the doctor's report on it. It is
// erdma.Snapshot, so that doctor.Snapshot gives a SnapshotFunc without
// importing this package (and Prometheus' client with it).
type Snapshot = erdma.Snapshot

// SnapshotFunc reads a Snapshot; the exporter calls it once per scrape.
// doctor.Snapshot returns one.
type SnapshotFunc func(ctx context.Context) (*Snapshot, error)

// Collector is a prometheus.Collector that reads the host on every scrape.
type Collector struct {
	snap    SnapshotFunc
	timeout time.Duration
	log     *slog.Logger
	// ctx is what a scrape's read derives from: the exporter's handler binds
	// it to the scrape (bound), so a read no one waits for is cancelled.
	ctx context.Context

	deviceInfo, portState, portActive, counter *prometheus.Desc
	netdevMTU, netdevUp, check, status         *prometheus.Desc
	up, duration, dropped                      *prometheus.Desc
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
		check:      d("doctor_check", erdma.PromHelpDoctorCheck, "id"),
		status:     d("doctor_status", erdma.PromHelpDoctorStatus),
		up:         d("up", "1 when the last scrape read the host without error."),
		duration:   d("scrape_duration_seconds", "Time the last scrape took to read the host."),
		dropped:    d("scrape_dropped_metrics", "Metrics of the last scrape left out because the host's data could not be a valid metric (logged)."),
	}
}

// WithLogger sets where the collector logs what it drops (default
// slog.Default()); it returns c.
func (c *Collector) WithLogger(l *slog.Logger) *Collector {
	c.log = l
	return c
}

func (c *Collector) logger() *slog.Logger {
	if c.log != nil {
		return c.log
	}
	return slog.Default()
}

// maxLabelLen bounds a label value read from the host (a sysfs attribute
// is at most a page; a label is a short identity).
const maxLabelLen = 128

// label makes host data a valid, bounded label value: invalid UTF-8 becomes
// U+FFFD (client_golang refuses it, and one refused metric used to blank
// the whole scrape).
func label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelLen {
		s = strings.ToValidUTF8(s[:maxLabelLen], "")
	}
	return s
}

// emitter sends metrics built from host data, never panicking: a metric
// that cannot be built is counted, logged and left out.
type emitter struct {
	ch      chan<- prometheus.Metric
	log     *slog.Logger
	dropped int
}

func (e *emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	for i := range labels {
		labels[i] = label(labels[i])
	}
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		e.dropped++
		e.log.Warn("exporter: metric dropped", "metric", d.String(), "labels", labels, "err", err)
		return
	}
	e.ch <- m
}

// bound returns a copy of c whose reads derive from ctx.
func (c *Collector) bound(ctx context.Context) *Collector {
	cc := *c
	cc.ctx = ctx
	return &cc
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.deviceInfo, c.portState, c.portActive, c.counter,
		c.netdevMTU, c.netdevUp, c.check, c.status, c.up, c.duration, c.dropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the host now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	base := c.ctx
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithTimeout(base, c.timeout)
	defer cancel()
	start := time.Now()
	snap, err := c.snap(ctx)
	e := &emitter{ch: ch, log: c.logger()}
	defer func() { e.emit(c.dropped, prometheus.GaugeValue, float64(e.dropped)) }()
	e.emit(c.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil || snap == nil || snap.Inventory == nil {
		e.emit(c.up, prometheus.GaugeValue, 0)
		return
	}
	e.emit(c.up, prometheus.GaugeValue, 1)
	netdevs := make(map[string]erdma.Netdev, len(snap.Inventory.Netdevs))
	for _, n := range snap.Inventory.Netdevs {
		netdevs[n.Name] = n
	}
	for _, d := range snap.Inventory.Devices {
		e.emit(c.deviceInfo, prometheus.GaugeValue, 1,
			d.Name, d.Driver, strconv.FormatBool(d.ERDMA), string(d.Transport), d.PCIAddress, d.Netdev, d.NodeGUID, d.FWVer)
		for _, p := range d.Ports {
			port := strconv.Itoa(p.Number)
			e.emit(c.portState, prometheus.GaugeValue, float64(p.StateCode), d.Name, port, p.State)
			e.emit(c.portActive, prometheus.GaugeValue, boolValue(p.StateCode == 4), d.Name, port)
			for name, v := range p.Counters {
				e.emit(c.counter, prometheus.CounterValue, float64(v), d.Name, port, name)
			}
		}
		if n, ok := netdevs[d.Netdev]; ok {
			e.emit(c.netdevMTU, prometheus.GaugeValue, float64(n.MTU), d.Name, n.Name)
			e.emit(c.netdevUp, prometheus.GaugeValue, boolValue(n.OperState == "up"), d.Name, n.Name)
		}
	}
	if snap.Report != nil {
		for _, f := range snap.Report.Findings {
			e.emit(c.check, prometheus.GaugeValue, float64(erdma.PromValue(f.Severity)), f.ID)
		}
		e.emit(c.status, prometheus.GaugeValue, float64(erdma.PromValue(snap.Report.Status)))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

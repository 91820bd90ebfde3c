package doctor

import (
	"context"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// SnapshotOptions is what Snapshot reads on each scrape.
type SnapshotOptions struct {
	// Doctor is the doctor's options for each scrape's run; its Interval is
	// not used (a scrape exposes the counters, Prometheus takes their
	// rates). Give Doctor.Metadata a cache (erdma.MetadataCache): off
	// Alibaba Cloud every uncached lookup costs its whole timeout.
	Doctor Options
	// InventoryOnly exposes the inventory without the doctor's report.
	InventoryOnly bool
	// ToolsTTL is how long the tools' versions (process starts) are reused;
	// 0 reads them on every scrape.
	ToolsTTL time.Duration
	// Checks, when set, adds checks to each scrape's run, given the
	// scrape's context (the cloud checks: eri.DoctorChecks with a view
	// cache).
	Checks func(ctx context.Context) []Check
}

// Snapshot is the monitor.SnapshotFunc `erdmakit exporter` serves
// (monitor.NewCollector(doctor.Snapshot(h, o), timeout)): on every scrape
// the inventory, without its tools, and, unless InventoryOnly, the doctor's
// report with the tools cached for ToolsTTL. Safe for concurrent scrapes.
// Its type is monitor.SnapshotFunc's, spelled without package monitor, so
// that importing doctor does not pull in Prometheus' client and protobuf.
func Snapshot(h erdma.Host, o SnapshotOptions) func(ctx context.Context) (*erdma.Snapshot, error) {
	var (
		mu      sync.Mutex
		tools   []erdma.Tool
		toolsAt time.Time
	)
	return func(ctx context.Context) (*erdma.Snapshot, error) {
		inv, err := erdma.ReadInventory(ctx, h, erdma.InventoryOptions{SkipTools: true})
		if err != nil {
			return nil, err
		}
		snap := &erdma.Snapshot{Inventory: inv}
		if o.InventoryOnly {
			return snap, nil
		}
		mu.Lock()
		if tools == nil || time.Since(toolsAt) > o.ToolsTTL {
			if t, err := h.Tools(ctx); err == nil {
				tools, toolsAt = t, time.Now()
			}
		}
		inv.Tools = tools
		mu.Unlock()
		opt := o.Doctor
		opt.Interval = 0
		if o.Checks != nil {
			opt.Checks = append(append([]Check(nil), opt.Checks...), o.Checks(ctx)...)
		}
		if snap.Report, err = Diagnose(ctx, h, inv, opt); err != nil {
			return nil, err
		}
		return snap, nil
	}
}

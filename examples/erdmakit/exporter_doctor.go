package main

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
)

// exporterDiagnose runs the doctor's checks on an inventory a scrape already
// read. No counter interval (the scrape exposes the counters; Prometheus
// computes their rates), and the instance is looked up once per scrape
// through the same bounded metadata client.
func exporterDiagnose(ctx context.Context, h erdma.Host, inv *erdma.Inventory) *erdma.Report {
	f := defaultDoctorFlags()
	f.interval = 0
	return diagnoseInventory(ctx, h, inv, f, nil, nil)
}

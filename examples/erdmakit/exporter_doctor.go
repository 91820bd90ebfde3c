package main

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
)

// exporterDiagnose runs the doctor for the exporter. Placeholder until the
// doctor lands: no findings.
func exporterDiagnose(ctx context.Context, inv *erdma.Inventory) *erdma.Report { return nil }

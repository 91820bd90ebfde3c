package main

import (
	"context"

	"github.com/erdmakit/erdmakit/erdma"
)

// localReport runs the doctor on this host (or --root) with the doctor's
// default settings, for `fleet doctor`.
func localReport(ctx context.Context, g *globals) (*erdma.Report, error) {
	h, closer, err := erdma.OpenHost(g.root)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return doctorReport(ctx, h, defaultDoctorFlags(), nil, nil)
}

// defaultDoctorFlags are the doctor's flag defaults, for the commands that
// run it without its flags.
func defaultDoctorFlags() doctorFlags {
	return doctorFlags{format: "table", metadataURL: erdma.DefaultMetadataURL, interval: doctorDefaultInterval}
}

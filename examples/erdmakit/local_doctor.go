package main

import (
	"context"
	"errors"

	"github.com/erdmakit/erdmakit/erdma"
)

// localReport runs the doctor on this host. Placeholder until the doctor
// lands.
func localReport(ctx context.Context, g *globals) (*erdma.Report, error) {
	return nil, errors.New("doctor not wired yet")
}

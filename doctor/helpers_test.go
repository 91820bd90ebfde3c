package doctor_test

import (
	"context"
	"path/filepath"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/health"
)

func hostDir(name string) string { return filepath.Join("..", "testdata", "hosts", name) }

func okCheck(context.Context, *doctor.Input) health.Finding {
	return health.Finding{Severity: health.OK, Summary: "fine"}
}

package doctor_test

import (
	"context"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/health"
)

func okCheck(context.Context, *doctor.Input) health.Finding {
	return health.Finding{Severity: health.OK, Summary: "fine"}
}

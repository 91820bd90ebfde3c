package report

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
)

// The page sorts and colours a status as fleet ranks host states
// (fleet.HostState): a severity as it is, a host's missing and error as
// fail (sorted below fail), not reached and a stage cut short as skip.
func TestStatusColourAndOrderFromFleet(t *testing.T) {
	for _, tc := range []struct {
		in    any
		class string
		order int
	}{
		{health.OK, "ok", 0},
		{health.Skip, "skip", 1},
		{health.Warn, "warn", 2},
		{health.Fail, "fail", 4},
		{fleet.HostFail, "fail", 4},
		{fleet.Missing, "fail", 3},
		{fleet.Errored, "fail", 3},
		{fleet.NotReached, "skip", 3},
		{health.Severity(fleet.Missing), "fail", 3},
		{stageInterrupted, "skip", 3},
		{health.Severity(""), "none", 0},
	} {
		assert.Equal(t, tc.class, sevClass(tc.in), "%v", tc.in)
		assert.Equal(t, tc.order, stateOf(tc.in).Order(), "%v", tc.in)
	}
	assert.Equal(t, health.Fail, worst(health.Warn, health.Severity(fleet.Missing)))
	assert.Equal(t, health.Warn, worst(health.Warn, health.Severity(fleet.NotReached)), "not reached says nothing")
	assert.Equal(t, 3, sevOrder(health.Severity(fleet.Errored)))
}

package live_test

import (
	"bytes"
	"testing"

	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/report"
	"github.com/erdmakit/erdmakit/report/live"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNilAndEmptyResultsPrintWithoutPanic: a report missing its parts (NVML
// said available but listed nothing, a status without the cloud's view, no
// attach result) still prints.
func TestNilAndEmptyResultsPrintWithoutPanic(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, live.WriteGPUsTable(&b, nil, nil, report.TableOptions{}))
	assert.Contains(t, b.String(), "NVML unavailable: no report")
	b.Reset()
	require.NoError(t, live.WriteGPUsTable(&b, &nvml.Report{Available: true}, nil, report.TableOptions{}))
	assert.Contains(t, b.String(), "0 GPUs")
	b.Reset()
	require.NoError(t, live.WriteERIStatusTable(&b, &eri.Status{}, nil))
	assert.Contains(t, b.String(), "ENI")
	require.NoError(t, live.WriteERIStatusTable(&b, nil, nil))
	require.NoError(t, live.WriteAttachResult(&b, nil))
}

// TestAttachDryRunListsTheCallsItWouldMake: a dry run prints the plan's
// calls and says none was made.
func TestAttachDryRunListsTheCallsItWouldMake(t *testing.T) {
	res := &eri.AttachResult{DryRun: true, Plan: eri.AttachPlan{Have: 0, Want: 2}}
	var b bytes.Buffer
	require.NoError(t, live.WriteAttachResult(&b, res))
	assert.Equal(t, "0 ERI(s) attached on distinct cards, 2 wanted: nothing to do\n", b.String())
}

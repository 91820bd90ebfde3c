package report_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/report"
	"github.com/erdmakit/erdmakit/setup/setupresult"
)

// TestSetupValueIsNameable (library-3 item 2): Input.Value of a setup
// run is a type an importer can name in a type switch.
func TestSetupValueIsNameable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "setup-dry-memlock-64k.json"))
	require.NoError(t, err)
	in, err := report.FromJSON("setup.json", b)
	require.NoError(t, err)
	require.Equal(t, report.KindSetup, in.Kind)
	switch v := in.Value().(type) {
	case *report.SetupResult:
		assert.True(t, v.DryRun)
		assert.NotEmpty(t, v.Verdict)
		assert.NotEmpty(t, v.Stages)
	default:
		t.Fatalf("Value() is %T", v)
	}
	// A value read back through FromValue is the same type.
	again, err := report.FromValue("again", in.Value())
	require.NoError(t, err)
	assert.IsType(t, &report.SetupResult{}, again.Value())
}

// TestSetupFromValue: a setup run given as a Go value is shown as it is
// (no trip through its JSON): Value is the very value, and the page judges
// it as the same run read from its JSON (a failed stage fails, a blocked
// one warns).
func TestSetupFromValue(t *testing.T) {
	run := &report.SetupResult{Verdict: setupresult.VerdictNotProven, Status: health.Fail, Stages: []setupresult.Stage{
		{Name: "os", Status: setupresult.StatusFailed, Error: "ip link set eri0 mtu 8500: operation not permitted", Next: "run as root",
			Changes: []setupresult.Change{{Stage: "os", Kind: "netlink", Target: "eri0", Command: "ip link set eri0 mtu 8500", Error: "operation not permitted"}}},
		{Name: "limits", Status: setupresult.StatusBlocked, Blocked: "a hard limit of 64 KiB", Next: "raise it"},
		{Name: "verify", Status: setupresult.StatusNotReached},
	}}
	in, err := report.FromValue("setup", run)
	require.NoError(t, err)
	require.Equal(t, report.KindSetup, in.Kind)
	assert.Same(t, run, in.Value(), "the value itself, not a copy read back from JSON")
	b, err := json.Marshal(run)
	require.NoError(t, err)
	fromJSON, err := report.FromJSON("setup.json", b)
	require.NoError(t, err)
	assert.Equal(t, run, fromJSON.Value())
	assert.Equal(t, health.Fail, report.Status(in))
	assert.Equal(t, report.Status(fromJSON), report.Status(in))
	var page strings.Builder
	require.NoError(t, report.Write(&page, report.Options{}, in))
	for _, id := range []string{"setup-os-failed", "setup-limits-blocked"} {
		assert.Contains(t, page.String(), id)
	}
	_, err = report.FromValue("nil", (*report.SetupResult)(nil))
	require.Error(t, err)
}

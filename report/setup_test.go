package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/report"
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

package main

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/version"
)

func TestVersion(t *testing.T) {
	code, out, errs := runCLI("version")
	require.Equal(t, ExitOK, code, errs)
	assert.Regexp(t, `^erdmakit github.com/erdmakit/erdmakit \S+.* go1\.\d+`, out)

	code, out, _ = runCLI("version", "--json")
	require.Equal(t, ExitOK, code)
	var in version.Info
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	assert.Equal(t, version.Module, in.Module)
	assert.True(t, in.Main)
	assert.Equal(t, runtime.Version(), in.GoVersion)

	code, _, _ = runCLI("version", "extra")
	assert.Equal(t, ExitUnknown, code)
}

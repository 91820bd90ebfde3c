package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatUnknownDevice: -d with a device the host lacks exited 0 with
// nothing ("ports": null).
func TestStatUnknownDevice(t *testing.T) {
	code, out, stderr := runCLI("stat", "-d", "nosuchdev", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, ExitUnknown, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "nosuchdev")
	assert.Contains(t, stderr, "erdma_0, erdma_1")

	code, _, stderr = runCLI("stat", "-d", "erdma_1", "--json", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, ExitOK, code, stderr)
}

// TestTopoJSONWithoutNVML: topo --json printed nothing when NVML was
// unavailable; it prints the reason as gpus --json does.
func TestTopoJSONWithoutNVML(t *testing.T) {
	code, out, stderr := runCLI("topo", "--json", "--root", hostDir("lab-rxe"))
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, stderr, "NVML unavailable")
	var v struct {
		Available   *bool  `json:"available"`
		Reason      string `json:"reason"`
		Remediation string `json:"remediation"`
		Nearest     []any  `json:"nearest"`
		Status      string `json:"status"`
		Findings    []struct {
			ID string `json:"id"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.NotNil(t, v.Available)
	assert.False(t, *v.Available)
	assert.NotEmpty(t, v.Reason)
	assert.NotEmpty(t, v.Remediation)
	assert.NotNil(t, v.Nearest)
	assert.Equal(t, "fail", v.Status)
	require.Len(t, v.Findings, 1)
	assert.Equal(t, "topo-nvml", v.Findings[0].ID)
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordReplaysGPUs: a recording carries the GPUs and the PCI topology,
// so gpus and topo on the replay say what they say on the recorded host.
func TestRecordReplaysGPUs(t *testing.T) {
	healthy := hostDir("ebmgn8is-healthy")
	archive := filepath.Join(t.TempDir(), "host.tar.gz")
	code, _, stderr := runCLI("record", "--root", healthy, "--out", archive)
	require.Equal(t, ExitOK, code, stderr)
	for _, cmd := range []string{"gpus", "topo"} {
		_, want, _ := runCLI(cmd, "--json", "--root", healthy)
		code, got, stderr := runCLI(cmd, "--json", "--root", archive)
		require.Equal(t, ExitOK, code, stderr)
		assert.JSONEq(t, strings.ReplaceAll(want, healthy, archive), got, cmd)
	}
}

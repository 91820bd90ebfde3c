package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompletionOfFixedValues: the shell completes every flag that takes
// one of a fixed set of values (hardening-3 item 21), through the same
// __complete entry point the generated bash/zsh/fish scripts call.
func TestCompletionOfFixedValues(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"doctor", "--format", ""}, []string{"table", "json", "prom"}},
		{[]string{"doctor", "--cloud", ""}, []string{"auto", "on", "off"}},
		{[]string{"devices", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"nccl", "run", "--launcher", ""}, []string{"mpirun", "srun"}},
		{[]string{"nccl", "run", "--gdr", ""}, []string{"auto", "on", "off"}},
		{[]string{"nccl", "run", "--srun-mpi", ""}, []string{"none", "pmi2", "pmix", "cray_shasta"}},
		{[]string{"nccl", "env", "--format", ""}, []string{"shell", "mpirun", "json"}},
		{[]string{"nccl", "env", "--gdr", ""}, []string{"auto", "on", "off"}},
		{[]string{"fleet", "prove", "--nccl-launcher", ""}, []string{"mpirun", "srun"}},
		{[]string{"fleet", "prove", "--nccl-srun-mpi", ""}, []string{"none", "pmi2", "pmix", "cray_shasta"}},
	} {
		code, out, stderr := runCLI(append([]string{"__complete"}, tt.args...)...)
		require.Equal(t, ExitOK, code, "%v: %s", tt.args, stderr)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, lines)
		assert.Equal(t, tt.want, lines[:len(lines)-1], "%v", tt.args)
		assert.Equal(t, ":4", lines[len(lines)-1], "%v: no file names offered", tt.args)
	}
	code, out, _ := runCLI("completion", "bash")
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, "__complete", "the bash script asks the binary, so it completes what the binary knows")
}

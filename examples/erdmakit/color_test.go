package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestColorUnderMPIRun: Open MPI gives each rank a pty, so before --color
// auto knew the launchers' rank variables a table piped from mpirun carried
// escape codes into files.
func TestColorUnderMPIRun(t *testing.T) {
	mpirun := requireMPIRun(t)
	bin := buildCLI(t)
	host, err := filepath.Abs(hostDir("no-peermem"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(mpirunArgs(), "-np", "1", bin, "doctor", "--root", host)
	out, _ := exec.CommandContext(ctx, mpirun, args...).Output() // exits 2: no-peermem fails
	require.Contains(t, string(out), "gdr-peermem")
	assert.NotContains(t, string(out), "\x1b[", "escape codes under mpirun")

	args = append(mpirunArgs(), "-np", "1", bin, "--color", "always", "doctor", "--root", host)
	out, _ = exec.CommandContext(ctx, mpirun, args...).Output()
	assert.Contains(t, string(out), "\x1b[", "--color always")
}

func TestColorFlag(t *testing.T) {
	host := hostDir("no-peermem")
	code, out, _ := runCLI("--color", "always", "doctor", "--root", host)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "\x1b[31mfail")
	_, out, _ = runCLI("--color", "never", "doctor", "--root", host)
	assert.NotContains(t, out, "\x1b[")
	code, _, stderr := runCLI("--color", "sometimes", "doctor", "--root", host)
	assert.Equal(t, ExitUnknown, code)
	assert.True(t, strings.Contains(stderr, `"sometimes"`), stderr)
}

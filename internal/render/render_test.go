package render

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, JSON(&b, map[string]int{"a": 1}))
	assert.Equal(t, "{\n  \"a\": 1\n}\n", b.String())
	assert.Error(t, JSON(&b, func() {}))
	assert.False(t, IsTerminal(&b))
}

func ExampleTable() {
	t := NewTable("DEVICE", "PORT", "STATE")
	t.Add("erdma_0", "1", "ACTIVE")
	t.Add("erdma_1", "1", "DOWN")
	_ = t.Write(stdout{})
	// Output:
	// DEVICE   PORT  STATE
	// erdma_0  1     ACTIVE
	// erdma_1  1     DOWN
}

func TestColorMode(t *testing.T) {
	var b bytes.Buffer
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "NO_COLOR", "TERM"} {
		t.Setenv(v, "")
	}
	os.Unsetenv("OMPI_COMM_WORLD_RANK")
	os.Unsetenv("PMI_RANK")
	os.Unsetenv("SLURM_PROCID")
	assert.True(t, ColorAlways.Wanted(&b))
	assert.False(t, ColorNever.Wanted(&b))
	assert.False(t, ColorAuto.Wanted(&b), "not a terminal")
	assert.True(t, ColorAuto.Wanted(WithColor(&b, true)))
	assert.False(t, ColorAlways.Wanted(WithColor(&b, false)))
	_, err := ParseColorMode("sometimes")
	assert.ErrorIs(t, err, ErrColorMode)
	m, err := ParseColorMode("never")
	assert.NoError(t, err)
	assert.Equal(t, ColorNever, m)
}

// TestColorAutoOffForRanks: a rank's stdout is a pty under Open MPI, so auto
// must not trust the terminal test there (nor with TERM=dumb).
func TestColorAutoOffForRanks(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/ptmx")
	}
	defer pty.Close()
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "NO_COLOR", "TERM"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	require.True(t, ColorAuto.Wanted(pty), "a pty outside any launcher is a terminal")
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "0")
			assert.False(t, ColorAuto.Wanted(pty))
		})
	}
	t.Run("TERM=dumb", func(t *testing.T) {
		t.Setenv("TERM", "dumb")
		assert.False(t, ColorAuto.Wanted(pty))
	})
}

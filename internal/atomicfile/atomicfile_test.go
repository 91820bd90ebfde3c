package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "erdmakit.prom")
	require.NoError(t, os.WriteFile(p, []byte("old\n"), 0o644))

	boom := errors.New("boom")
	err := Write(p, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	assert.ErrorIs(t, err, boom)
	b, _ := os.ReadFile(p)
	assert.Equal(t, "old\n", string(b), "a failed write leaves the old file")

	require.NoError(t, Write(p, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "new\n")
		return err
	}))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "new\n", string(b))
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1, "no temporary file left")
	fi, _ := os.Stat(p)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

func TestWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	err := Write(dir, 0o644, func(io.Writer) error { return nil })
	assert.ErrorIs(t, err, ErrNotRegular)
	_, err = os.Stat(dir)
	assert.NoError(t, err)
}

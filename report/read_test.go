package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReadFiles bounds each input and all of them together, regular files
// before reading any, pipes (stdin) as they are read; the error names the
// file and the limit.
func TestReadFilesBoundsTheTotal(t *testing.T) {
	dir := t.TempDir()
	doc, err := os.ReadFile(filepath.Join("testdata", "doctor-healthy.json"))
	require.NoError(t, err)
	write := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, doc, 0o644))
		return p
	}
	a, b, c := write("a.json"), write("b.json"), write("c.json")
	n := int64(len(doc))
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		each, total int64
		paths       []string
		stdin       string
		err         string // "" for none
	}{
		{"within", n, 3 * n, []string{a, b, c}, "", ""},
		{"the third over the total", n, 3*n - 1, []string{a, b, c}, "", "c.json: the inputs up to it are"},
		{"one over its own bound", n - 1, 3 * n, []string{a}, "", "a.json: "},
		{"stdin over the total", n, 2*n - 1, []string{a, "-"}, string(doc), "stdin: the inputs up to it are more than"},
		{"stdin within", n, 2 * n, []string{a, "-"}, string(doc), ""},
		{"stdin twice", n, 3 * n, []string{"-", "-"}, string(doc), "named twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ins, err := readFiles(ctx, strings.NewReader(tt.stdin), tt.each, tt.total, tt.paths)
			if tt.err == "" {
				require.NoError(t, err)
				assert.Len(t, ins, len(tt.paths))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
			if !strings.Contains(tt.name, "twice") {
				assert.ErrorIs(t, err, ErrTooLarge)
				assert.Contains(t, err.Error(), "report.Max")
			}
		})
	}
	// The exported bound: three sparse 50 MiB files, refused before any is read.
	var big []string
	for _, name := range []string{"x.json", "y.json", "z.json"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Truncate(p, 50<<20))
		big = append(big, p)
	}
	_, err = ReadFiles(ctx, nil, big...)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "z.json: the inputs up to it are 150 MiB together, more than 128 MiB (report.MaxTotalBytes)")
}

package units

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The forms the CLI's tables, plots and findings showed before they shared
// this function (docs/bw.md, docs/nccl.md and the findings quote them).
func TestFormatKeepsTheShownForms(t *testing.T) {
	for _, tc := range []struct {
		n                    int64
		label, compact, text string
	}{
		{2, "2", "2B", "2 B"},
		{1000, "1000", "1000B", "1000 B"},
		{1024, "1K", "1KiB", "1 KiB"},
		{65536, "64K", "64KiB", "64 KiB"},
		{1536, "1536", "1536B", "1536 B"},
		{3 << 19, "1536K", "1536KiB", "1536 KiB"},
		{8 << 20, "8M", "8MiB", "8 MiB"},
		{1 << 30, "1G", "1GiB", "1 GiB"},
		{16 << 30, "16G", "16GiB", "16 GiB"},
		{1 << 40, "1T", "1TiB", "1 TiB"},
		{0, "0", "0B", "0 B"},
	} {
		assert.Equal(t, tc.label, Format(tc.n, Label), "%d", tc.n)
		assert.Equal(t, tc.compact, Format(tc.n, Compact), "%d", tc.n)
		assert.Equal(t, tc.text, Format(tc.n, Text), "%d", tc.n)
	}
}

func TestParseReadsEveryShownForm(t *testing.T) {
	for in, want := range map[string]int64{"65536": 65536, "64K": 65536, "64KiB": 65536, "64kb": 65536, "64 KiB": 65536,
		"1M": 1 << 20, "2": 2, "8m": 8 << 20, "1G": 1 << 30, " 10K ": 10 << 10, "2B": 2} {
		got, err := Parse(in, 1<<30)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "0", "-4", "2G", "x", "K", "1.5M", "9223372036854775807K"} {
		_, err := Parse(bad, 1<<30)
		assert.Error(t, err, bad)
	}
	_, err := Parse("2G", 1<<30)
	assert.EqualError(t, err, `size "2G": want a byte count like 65536, 64K or 1M (at most 1G)`)
	n, err := Parse("8E", math.MaxInt64)
	assert.Error(t, err, "no exabytes: %d", n)
}

func TestParseFormatRoundTrip(t *testing.T) {
	for _, n := range []int64{1, 2, 100, 1024, 4096, 65536, 1 << 20, 3 << 20, 1 << 30} {
		for _, s := range []Style{Label, Compact, Text} {
			got, err := Parse(Format(n, s), 1<<30)
			require.NoError(t, err, Format(n, s))
			assert.Equal(t, n, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"65536", "64K", "64KiB", "1M", "8 MiB", "1G", "x", "-1", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s, 1<<30)
		if err != nil {
			return
		}
		if n <= 0 || n > 1<<30 {
			t.Fatalf("Parse(%q) = %d outside 1..1G", s, n)
		}
		back, err := Parse(Format(n, Compact), 1<<30)
		if err != nil || back != n {
			t.Fatalf("round trip of %d: %d, %v", n, back, err)
		}
	})
}

package nvrules

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMajor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"535.161.08", 535, true},
		{" 470.42.01\n", 470, true},
		{"570", 570, true},
		{"", 0, false},
		{"abc.1", 0, false},
		{"0.1", 0, false},
		{"-3.1", 0, false},
	} {
		n, err := Major(tc.in)
		if !tc.ok {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), strconv.Quote(tc.in))
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, n, tc.in)
	}
}

func TestBundlesPeermem(t *testing.T) {
	for v, want := range map[string][2]bool{
		"535.161.08": {true, true},
		"470.1":      {true, true},
		"460.91.03":  {false, true},
		"":           {false, false},
	} {
		b, known := BundlesPeermem(v)
		assert.Equal(t, want, [2]bool{b, known}, v)
	}
}

func TestTextsSayTheRule(t *testing.T) {
	for _, s := range []string{InstallDriver(), Upgrade(), LoadPeermem(), TooOld("460.1")} {
		assert.Contains(t, s, strconv.Itoa(PeermemMin))
	}
}

func FuzzMajor(f *testing.F) {
	for _, s := range []string{"535.161.08", "470.256.02", "550.54.15", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Major(s)
		if err == nil && n <= 0 {
			t.Fatalf("Major(%q) = %d without an error", s, n)
		}
	})
}

package nvml

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeBusID(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "00000000:17:00.0", want: "0000:17:00.0"},
		{in: "00000000:1A:00.0", want: "0000:1a:00.0"},
		{in: "0000:80:05.0", want: "0000:80:05.0"},
		{in: "17:00.0", want: "0000:17:00.0"},
		{in: " 0001:b8:1f.7\n", want: "0001:b8:1f.7"},
		{in: "", err: "empty"},
		{in: "17:00", err: "no function"},
		{in: "zz:00.0", err: "bad hex"},
		{in: "0000:17:20.0", err: "bad hex"}, // device is 5 bits
		{in: "0000:17:00.8", err: "bad hex"}, // function is 3 bits
		{in: "00010000:17:00.0", err: "4 digits"},
		{in: "a:b:c:d", err: "want [domain:]bus"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeBusID(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzNormalizeBusID(f *testing.F) {
	for _, s := range []string{"00000000:17:00.0", "0000:00:05.0", "17:00.0", "00000000:1A:00.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeBusID(s)
		if err != nil {
			return
		}
		again, err := NormalizeBusID(got)
		if err != nil || again != got || !looksLikeBDF(got) {
			t.Fatalf("%q -> %q, not a fixed point (%q, %v)", s, got, again, err)
		}
	})
}

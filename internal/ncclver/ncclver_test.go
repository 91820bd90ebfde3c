package ncclver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"2.21.5", "2.29.2", true},
		{"2.29.2", "2.21.5", false},
		{"2.29.7", "2.29.7", false},
		{"2.27", "2.27.0", false},
		{"2.27", "2.27.1", true},
		{"2.29.7+cuda12.4", "2.29.7", false},
		{"2.29.6+cuda12.4", "2.29.7+cuda13.0", true},
		{"2.x", "2.1", true},
		{"", "2.1", true},
	} {
		assert.Equal(t, tc.less, Less(tc.a, tc.b), "%q < %q", tc.a, tc.b)
	}
}

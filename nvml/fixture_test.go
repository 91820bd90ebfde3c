package nvml

import (
	"testing"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// hostRoot unpacks a recorded host of the repository's testdata/hosts into
// a temporary directory and returns its root.
func hostRoot(t testing.TB, name string) string { return fixture.Host(t, name) }

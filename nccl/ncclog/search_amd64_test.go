//go:build amd64 && !purego

package ncclog

import (
	"os"
	"testing"
)

// TestFindNCCLVectorisedInCI: CI's machines have AVX2, so the vector search
// is what the other tests exercise there; a CPU without it would leave the
// assembly untested, which must not pass silently.
func TestFindNCCLVectorisedInCI(t *testing.T) {
	if !findNCCLVectorised && os.Getenv("CI") == "true" {
		t.Fatal("this CPU has no AVX2: the vectorised findNCCL is not tested")
	}
}

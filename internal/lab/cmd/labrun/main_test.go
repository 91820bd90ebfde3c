package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// When the lab cannot start (here: a kernel that is not installed), CI=true
// fails with exit 2 and says why; outside CI the run is skipped with exit 0.
func TestUnavailableFailsUnderCI(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		code int
		says string
	}{
		{"true", 2, "labrun: FAIL: lab unavailable: no kernel 0.0.0-none"},
		{"", 0, "labrun: SKIP: lab unavailable: no kernel 0.0.0-none"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"-C", "../../../..", "-pkg", "./internal/lab", "-kernel", "0.0.0-none", "-work", t.TempDir()}, &out, &errb)
			assert.Equal(t, tc.code, code, errb.String())
			assert.Contains(t, errb.String(), tc.says)
		})
	}
}

func TestBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), []string{"-nope"}, &out, &errb))
	assert.Equal(t, 2, run(t.Context(), []string{"-C", "../../../..", "-pkg", "./nccl"}, &out, &errb))
	assert.Contains(t, errb.String(), "has no lab tests")
}

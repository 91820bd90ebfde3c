package perf

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRaiseMaxProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	assert.Equal(t, 1, RaiseMaxProcs())
	assert.Equal(t, MinProcs, runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(5)
	assert.Equal(t, 5, RaiseMaxProcs(), "a higher setting is left alone")
	assert.Equal(t, 5, runtime.GOMAXPROCS(0))
}

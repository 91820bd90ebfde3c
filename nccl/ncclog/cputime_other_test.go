//go:build !unix

package ncclog

import "time"

// processCPU is not read here: benchmarks report no CPU per byte.
func processCPU() time.Duration { return 0 }

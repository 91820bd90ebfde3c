//go:build !unix

package report

import "time"

// cpuTime is not read here: benchmarks report 0 CPU seconds per op.
func cpuTime() time.Duration { return 0 }

//go:build !linux

package perf

import "runtime"

func osYield() { runtime.Gosched() }

package perf

import "runtime"

// MinProcs is the fewest Ps (GOMAXPROCS) a program running write loops
// should have; see RaiseMaxProcs.
const MinProcs = 2

// RaiseMaxProcs raises GOMAXPROCS to MinProcs when it is lower (a
// one-CPU host or VM) and returns the previous setting. Programs call it
// once at start; the library never changes it on its own.
//
// Why: on software RDMA (rxe) the provider does the device's work inside
// ibv_post_send, so one post of a list is a cgo call of milliseconds. With
// a single P, Go's sysmon takes that P back during every such call (it
// only leaves a P in a long call alone while another P is idle) and then
// wakes every 20 µs. In the lab (1 vCPU, qemu TCG) two Ps made the 4 KiB
// write loop 4.7% faster (see docs/bw.md, Performance).
func RaiseMaxProcs() (previous int) {
	previous = runtime.GOMAXPROCS(0)
	if previous < MinProcs {
		runtime.GOMAXPROCS(MinProcs)
	}
	return previous
}

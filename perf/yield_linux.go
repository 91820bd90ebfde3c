package perf

import "syscall"

// osYield gives the CPU to another runnable thread for a moment
// (sched_yield): on software RDMA (rxe) the device's work runs in kernel
// threads and softirqs that a spinning poller would otherwise starve.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

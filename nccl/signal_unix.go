//go:build unix

package nccl

import "syscall"

// signalPID sends sig to pid, ignoring a process already gone.
func signalPID(pid int, sig syscall.Signal) { _ = syscall.Kill(pid, sig) }

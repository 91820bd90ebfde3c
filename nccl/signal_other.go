//go:build !unix

package nccl

import (
	"os"
	"syscall"
)

// signalPID ends pid: outside Unix there are no signals to send, only
// termination (mpirun and srun run on Linux; the package builds elsewhere
// for its parsers and types).
func signalPID(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

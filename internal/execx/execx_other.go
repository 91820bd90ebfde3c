//go:build !unix

package execx

import "os/exec"

// group, where there are no process groups (Windows), ends the program
// itself on cancel (exec.CommandContext's default Kill). erdmakit's
// launchers (mpirun, srun, perftest) run on Linux; this keeps the
// portable packages (the log parsers) building everywhere.
func group(cmd *exec.Cmd) {}

// Package execx runs external programs the one way erdmakit allows: as argv
// (never through a shell), under a context, in their own process group, so
// that cancelling the context ends every process the program started (on
// Unix; elsewhere the program itself, so that portable packages build).
package execx

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// Grace is how long a cancelled process group has between SIGTERM and SIGKILL.
const Grace = 3 * time.Second

// Command is exec.CommandContext with process-group handling: on cancel the
// whole group gets SIGTERM, then SIGKILL after Grace if anything is left.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	group(cmd)
	cmd.WaitDelay = Grace + time.Second
	return cmd
}

// Output runs the command and returns its standard output; the error wraps
// the exit status and, when the program wrote any, the tail of its stderr.
func Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := Command(ctx, name, args...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			msg := ee.Stderr
			if len(msg) > 512 {
				msg = msg[len(msg)-512:]
			}
			return out, &RunError{Name: name, Err: err, Stderr: string(msg)}
		}
		return out, &RunError{Name: name, Err: err}
	}
	return out, nil
}

// RunError is a program that could not be run or exited non-zero.
type RunError struct {
	Name   string
	Err    error
	Stderr string
}

func (e *RunError) Error() string {
	if e.Stderr != "" {
		return e.Name + ": " + e.Err.Error() + ": " + e.Stderr
	}
	return e.Name + ": " + e.Err.Error()
}

func (e *RunError) Unwrap() error { return e.Err }

package main

import (
	"fmt"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/internal/safetext"
	"github.com/spf13/cobra"
)

// Exit codes follow the Nagios convention so that health checkers can use
// them directly: health's, the one definition an importer uses too. Every
// subcommand returns its code through exitError.
const (
	ExitOK      = health.ExitOK      // everything checked is fine
	ExitWarn    = health.ExitWarn    // something is degraded (a warning finding, bandwidth below expectation)
	ExitFail    = health.ExitFail    // something is broken (a failing finding, a failed test)
	ExitUnknown = health.ExitUnknown // erdmakit could not run the check (bad flags, unreadable input)
)

// exitError carries an exit code out of a subcommand; err may be nil when the
// output already said everything.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status"
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode returns an error that makes run return code (nil for ExitOK).
func exitCode(code int) error {
	if code == ExitOK {
		return nil
	}
	return exitWith(code, nil)
}

// severityExit maps a status to the exit code: health's rule (0 ok and
// skip, 1 warn, 2 fail).
func severityExit(s health.Severity) int { return health.ExitCode(s, nil) }

// exitWith is the error of a command that ends with code and says err
// (printed); couldNotRun and checkFailed are its two usual codes.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// checkFailed is the error of a command whose check found something broken
// and says what in err: exit 2 (health.ExitFail), err printed.
func checkFailed(err error) error { return exitWith(health.ExitFail, err) }

// couldNotRun is the error of a command that could not run its check (bad
// flags, unreadable input, no such device): exit 3 (health.ExitUnknown),
// err printed.
func couldNotRun(err error) error { return exitWith(health.ExitUnknown, err) }

// untilInterrupted marks a command that runs until SIGINT/SIGTERM (bw serve,
// exporter, stat -l): the signal is its normal end, not an interruption.
const untilInterrupted = "erdmakit/until-interrupted"

func markUntilInterrupted(c *cobra.Command) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[untilInterrupted] = "true"
}

func runsUntilInterrupted(c *cobra.Command) bool {
	return c != nil && c.Annotations[untilInterrupted] == "true"
}

// emit prints rep as JSON (--json) or through table, and returns the
// exit code of its status: the last step of every judged command.
func emit(g *globals, rep any, status health.Severity, table func() error) error {
	if g.json {
		if err := render.JSON(g.stdout, rep); err != nil {
			return err
		}
	} else if err := table(); err != nil {
		return err
	}
	return exitCode(severityExit(status))
}

// printErrors sends a report's errors to stderr, one "error:" line each,
// unless the report goes out as JSON (which carries them).
func printErrors(g *globals, errs []string) {
	if g.json {
		return
	}
	for _, e := range errs {
		// One line each: an error may carry a peer's host name.
		fmt.Fprintln(g.stderr, "error:", safetext.Line(e))
	}
}

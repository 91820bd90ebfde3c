package main

import (
	"fmt"

	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/version"
	"github.com/spf13/cobra"
)

// newVersionCmd: `erdmakit version`, what package version reads from the
// binary.
func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print erdmakit's module version and VCS revision",
		Long: "Prints the module version (a tag, a pseudo-version, or (devel) for a build in a checkout), the VCS\n" +
			"revision and whether the tree was modified (stamped by go build inside a checkout), and the Go\n" +
			"version that built the binary. A release build (make release) says the version and revision\n" +
			"stamped from git describe. --json prints the same fields (module, version, revision, time,\n" +
			"modified, main, go, release).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, _ := version.Get()
			if g.json {
				if err := render.JSON(g.stdout, in); err != nil {
					return couldNotRun(err)
				}
				return nil
			}
			fmt.Fprintln(g.stdout, "erdmakit", in)
			return nil
		},
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newReportCmd: `erdmakit report RESULT.json...`, package report's page.
func newReportCmd(g *globals) *cobra.Command {
	var out, title string
	var redact bool
	c := &cobra.Command{
		Use:   "report [-o FILE.html] [--redact] RESULT.json...",
		Short: "One self-contained HTML page from erdmakit --json results: the verdict, the findings per host, the charts",
		Long: "Reads the --json output of doctor, fleet doctor, bw run/loopback/mesh/lat, perftest, nccl run and\n" +
			"parse nccl/nccl-log/perftest/topo, fleet prove, setup (- for stdin; the kind is recognised by its keys) and\n" +
			"writes one HTML " +
			"page: the verdict first, then per host the findings, failing first, with evidence and fix, then the\n" +
			"charts inline. The page fetches nothing from the network (it can be attached to a ticket). --redact\n" +
			"replaces host names, MACs, addresses, GIDs, GUIDs, GPU UUIDs, instance ids and the region as record\n" +
			"--redact does. A result with keys this erdmakit does not know (a newer erdmakit's) is rendered as far\n" +
			"as it is known, and the page says so. Exit: the verdict (0 ok, 1 warn, 2 fail) once the page is\n" +
			"written; 3 when an input cannot be read or is not an erdmakit result (the error names the file).",
		Example: "  erdmakit fleet doctor --json > fleet.json; erdmakit bw mesh --json > mesh.json\n" +
			"  erdmakit report -o cluster.html --redact fleet.json mesh.json",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.json {
				return couldNotRun(errors.New("--json: report writes an HTML page (-o FILE.html, or stdout)"))
			}
			ins, err := report.ReadFiles(cmd.Context(), cmd.InOrStdin(), args...)
			if err != nil {
				return couldNotRun(err)
			}
			for _, in := range ins {
				if u := in.Unknown(); len(u) > 0 {
					fmt.Fprintf(g.stderr, "erdmakit report: %s: %d key(s) this erdmakit does not know (a newer erdmakit's result?): rendered what is known\n", in.Name, len(u))
				}
			}
			opts := report.Options{Title: title, Redact: redact, Generated: time.Now()}
			write := func(w io.Writer) error { return report.Write(w, opts, ins...) }
			if out == "" || out == "-" {
				err = write(g.stdout)
			} else {
				err = atomicfile.Write(out, 0o644, write)
			}
			if err != nil {
				return couldNotRun(err)
			}
			return exitCode(severityExit(report.Status(ins...)))
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "write the page to this file (default: stdout)")
	c.Flags().BoolVar(&redact, "redact", false, "replace what identifies hosts and the cloud account, as record --redact does")
	c.Flags().StringVar(&title, "title", "", "the page's title (default \"erdmakit report\")")
	return c
}

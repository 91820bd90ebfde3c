package main

import (
	"context"
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newParsePerftestCmd: `erdmakit parse perftest FILE`, any ib_write_bw log
// (also read/send and latency variants) into the perftest report.
func newParsePerftestCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "perftest FILE",
		Short: "Parse an ib_write_bw (perftest) log (- for stdin): header, results in Gbit/s, errors",
		Long: "Reads any perftest log (ib_write_bw, ib_read_bw, ib_send_bw, *_lat; server and client output\n" +
			"interleaved in one file too) and prints the test, the device and the results with bandwidth in\n" +
			"Gbit/s whatever unit the log used; --json prints the report (schema in docs/parse.md).\n" +
			"Exit 0 when the log shows results and no error, 2 when it shows errors or no result, 3 when\n" +
			"FILE cannot be read or holds no perftest output.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return parseFile(g, cmd, args[0], perftest.Parse, passFail((*perftest.Report).OK),
				func(w io.Writer, r *perftest.Report, _ parseVerdict) error { return printParsedPerftest(w, r) })
		},
	}
}

// openParseInput opens FILE, or returns stdin for "-". Opening a FIFO
// blocks until a writer comes: ctx ending (Ctrl-C) gives up on it.
func openParseInput(ctx context.Context, path string, stdin io.Reader) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(stdin), nil
	}
	f, err := ctxio.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// printParsedPerftest writes the human form of a perftest report: report's
// table of it, then its errors and warnings.
func printParsedPerftest(w io.Writer, r *perftest.Report) error {
	if err := report.WritePerftestLogTable(w, r, report.TableOptions{}); err != nil {
		return err
	}
	why := "no result rows"
	if len(r.Errors) > 0 {
		why = fmt.Sprintf("%d error(s)", len(r.Errors))
	}
	return writeMessages(w, r.OK(), r.Errors, r.Warnings, why)
}

// writeMessages writes the errors and warnings a log showed and the status
// line ("ok", or "fail" and why), coloured on a terminal.
func writeMessages(w io.Writer, ok bool, errs, warns []string, why string) error {
	vd := parseVerdict{status: health.OK}
	if !ok {
		vd.status = health.Fail
	}
	return writeVerdict(w, errs, warns, vd, []string{why})
}

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/perf/perftest"
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

// printParsedPerftest writes the human form of a perftest report.
func printParsedPerftest(w io.Writer, r *perftest.Report) error {
	head := render.NewTable("FIELD", "VALUE")
	add := func(k, v string) {
		if v != "" {
			head.Add(k, v)
		}
	}
	add("test", r.Test)
	add("role", r.Role)
	add("device", r.Device)
	if r.QPs > 0 {
		add("qps", strconv.Itoa(r.QPs))
	}
	add("transport", r.Transport)
	add("link type", r.LinkType)
	if r.Test != "" {
		add("rdma_cm", onOff(r.RDMACM))
	}
	if r.MTU > 0 {
		add("mtu", strconv.Itoa(r.MTU))
	}
	if r.GIDIndex.Known {
		add("gid index", r.GIDIndex.String())
	}
	if r.Units != "" {
		add("log units", r.Units+" (shown as Gbit/s)")
	}
	if r.DurationS > 0 {
		add("run time", strconv.FormatFloat(r.DurationS, 'f', -1, 64)+" s")
	}
	if err := head.Write(w); err != nil {
		return err
	}
	if len(r.Results) > 0 {
		t := render.NewTable("BYTES", "ITERATIONS", "PEAK Gbit/s", "AVG Gbit/s", "Mpps")
		for _, x := range r.Results {
			t.Add(strconv.FormatInt(x.Bytes, 10), strconv.FormatInt(x.Iterations, 10),
				fmt.Sprintf("%.2f", x.BWPeakGbps), fmt.Sprintf("%.2f", x.BWAvgGbps), fmt.Sprintf("%.6f", x.MsgRateMpps))
		}
		if err := writeSection(w, t); err != nil {
			return err
		}
	}
	if len(r.Latency) > 0 {
		t := render.NewTable("BYTES", "ITERATIONS", "MIN us", "TYPICAL us", "AVG us", "MAX us", "P99 us", "P99.9 us")
		for _, x := range r.Latency {
			f := func(v float64) string { return fmt.Sprintf("%.2f", v) }
			t.Add(strconv.FormatInt(x.Bytes, 10), strconv.FormatInt(x.Iterations, 10), f(x.MinUS), f(x.TypicalUS),
				f(x.AvgUS), f(x.MaxUS), f(x.P99US), f(x.P999US))
		}
		if err := writeSection(w, t); err != nil {
			return err
		}
	}
	why := "no result rows"
	if len(r.Errors) > 0 {
		why = fmt.Sprintf("%d error(s)", len(r.Errors))
	}
	return writeMessages(w, r.OK(), r.Errors, r.Warnings, why)
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// writeSection writes a blank line and t.
func writeSection(w io.Writer, t *render.Table) error {
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return t.Write(w)
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

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newParseCmd groups the parsers of other tools' output: each package that
// owns a format adds its subcommand in parseSubcommands.
func newParseCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "parse",
		Short: "Parse logs of ib_write_bw, nccl-tests, NCCL and nvidia-smi into JSON or a table",
	}
	for _, s := range parseSubcommands(g) {
		c.AddCommand(s)
	}
	return c
}

func parseSubcommands(g *globals) []*cobra.Command {
	return []*cobra.Command{
		newParseTopoCmd(g),
		newParsePerftestCmd(g),
		newParseNCCLCmd(g),
		newParseNCCLLogCmd(g),
	}
}

// parseVerdict is what a parsed log says about the run it records: the
// findings of the diagnosis that owns the format (none for a format
// without one) and the status, which decides the exit code.
type parseVerdict struct {
	findings []health.Finding
	status   health.Severity
}

// passFail is the verdict of a format judged only by its parser's ok: ok
// or fail, no findings.
func passFail[T any](ok func(T) bool) func(T) parseVerdict {
	return func(v T) parseVerdict {
		if ok(v) {
			return parseVerdict{status: health.OK}
		}
		return parseVerdict{status: health.Fail}
	}
}

// parseFile is the shape every `parse` subcommand shares: open FILE (or
// stdin for -), parse it, judge it, print JSON or the human form, and exit
// with the verdict's status (0 ok, 1 warn, 2 fail; severityExit), 3 when
// FILE cannot be read or parsed. The JSON is the parsed value alone: the
// verdict only sets the exit code there.
func parseFile[T any](g *globals, cmd *cobra.Command, path string,
	parse func(context.Context, io.Reader) (T, error), judge func(T) parseVerdict, print func(io.Writer, T, parseVerdict) error) error {
	in, err := openParseInput(cmd.Context(), path, cmd.InOrStdin())
	if err != nil {
		return couldNotRun(err)
	}
	defer in.Close()
	// The parsers honour the context, even on a FIFO or a silent stdin.
	v, err := parse(cmd.Context(), in)
	if err != nil {
		return couldNotRun(fmt.Errorf("%s: %w", path, err))
	}
	vd := judge(v)
	if g.json {
		err = render.JSON(g.stdout, v)
	} else {
		err = print(render.WithColor(g.stdout, g.colorOn(g.stdout)), v, vd)
	}
	if err != nil {
		return couldNotRun(err)
	}
	return exitCode(severityExit(vd.status))
}

// writeVerdict writes the errors and warnings a log showed, the findings of
// its diagnosis (the table the doctor and nccl run print) and the status
// line: "ok", or the status and why; coloured on a terminal.
func writeVerdict(w io.Writer, errs, warns []string, vd parseVerdict, why []string) error {
	colour := func(word string) string {
		if render.ColorWanted(w) {
			return render.Severity(word)
		}
		return word
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, e := range errs {
		fmt.Fprintf(&b, "%s  %s\n", colour("error"), e)
	}
	for _, x := range warns {
		fmt.Fprintf(&b, "%s  %s\n", colour("warn"), x)
	}
	if len(vd.findings) > 0 {
		if len(errs)+len(warns) > 0 {
			b.WriteString("\n")
		}
		if err := report.WriteFindingsTable(&b, vd.findings, report.TableOptions{Color: render.ColorWanted(w)}); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	status := vd.status
	if status == health.Skip || status == "" {
		status = health.OK
	}
	if status == health.OK || len(why) == 0 {
		fmt.Fprintf(&b, "%s\n", colour(string(status)))
	} else {
		fmt.Fprintf(&b, "%s  %s\n", colour(string(status)), strings.Join(why, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// worstIDs names the findings at status (warn or fail): the why of a
// status line.
func worstIDs(vd parseVerdict) []string {
	var ids []string
	for _, f := range vd.findings {
		if f.Severity == vd.status && (f.Severity == health.Warn || f.Severity == health.Fail) {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return []string{strings.Join(ids, ", ")}
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/internal/render"
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

// parseFile is the shape every `parse` subcommand shares: open FILE (or
// stdin for -), parse it, print JSON or the human form, and exit 2 when the
// parsed log shows a failure (ok false), 3 when FILE cannot be read or parsed.
func parseFile[T any](g *globals, cmd *cobra.Command, path string,
	parse func(context.Context, io.Reader) (T, error), print func(io.Writer, T) error, ok func(T) bool) error {
	in, err := openParseInput(cmd.Context(), path, cmd.InOrStdin())
	if err != nil {
		return &exitError{code: ExitUnknown, err: err}
	}
	defer in.Close()
	// The parsers honour the context, even on a FIFO or a silent stdin.
	v, err := parse(cmd.Context(), in)
	if err != nil {
		return &exitError{code: ExitUnknown, err: fmt.Errorf("%s: %w", path, err)}
	}
	if g.json {
		err = render.JSON(g.stdout, v)
	} else {
		err = print(render.WithColor(g.stdout, g.colorOn(g.stdout)), v)
	}
	if err != nil {
		return &exitError{code: ExitUnknown, err: err}
	}
	if !ok(v) {
		return exitCode(ExitFail)
	}
	return nil
}

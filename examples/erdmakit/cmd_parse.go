package main

import "github.com/spf13/cobra"

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
		newParsePerftestCmd(g),
		newParseNCCLCmd(g),
		newParseNCCLLogCmd(g),
	}
}

package main

import (
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/report"
	"github.com/spf13/cobra"
)

// newParseTopoCmd: `erdmakit parse topo FILE`, nvidia-smi topo -m output
// into erdmakit's matrix (the same type `erdmakit topo` computes).
func newParseTopoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "topo FILE",
		Short: "Parse `nvidia-smi topo -m` output (TAB- or space-separated, - for stdin) into the topo matrix",
		Long: "Reads nvidia-smi topo -m output as the tool writes it (TABs) or as pasted (aligned spaces), skipping\n" +
			"lines around it, and prints the matrix, the NIC legend and the nearest NIC per GPU with what the\n" +
			"distance means for NCCL; --json prints the matrix (schema in docs/parse.md).\n" +
			"Exit 0; 3 when FILE holds no complete matrix.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := parseTopoFile(cmd.Context(), args[0], cmd.InOrStdin())
			if err != nil {
				return couldNotRun(err)
			}
			if g.json {
				if err := render.JSON(g.stdout, m); err != nil {
					return couldNotRun(err)
				}
				return nil
			}
			if err := report.WriteTopoTable(g.stdout, m, report.TableOptions{}); err != nil {
				return couldNotRun(err)
			}
			return nil
		},
	}
}

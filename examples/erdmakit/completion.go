package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// completeValues makes the shell complete flag's fixed set of values
// (`erdmakit completion bash|zsh|fish|powershell`). The values are the same
// list the command checks, so the two cannot drift.
func completeValues(c *cobra.Command, flag string, values ...string) {
	if err := c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(fmt.Sprintf("completion of --%s on %s: %v", flag, c.Name(), err)) // a programming error, caught by the tests
	}
}

// gdrModes are the values of nccl env/run --gdr.
var gdrModes = []string{"auto", "on", "off"}

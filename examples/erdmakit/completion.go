package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// completeValues makes the shell complete flag's fixed set of values
// (`erdmakit completion bash|zsh|fish|powershell`). Name them with the
// constants or list the command checks where there is one (eri.CloudAuto,
// render.ColorAuto, nccl.LauncherMPIRun, doctorFormats);
// TestCompletionOfFixedValues pins the rest.
func completeValues(c *cobra.Command, flag string, values ...string) {
	if err := c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(fmt.Sprintf("completion of --%s on %s: %v", flag, c.Name(), err)) // a programming error, caught by the tests
	}
}

// gdrModes are the values of nccl env/run --gdr.
func gdrModes() []string { return []string{"auto", "on", "off"} }

// srunMPIPlugins are the values of nccl run --srun-mpi and fleet prove
// --nccl-srun-mpi: srun's --mpi plugins.
func srunMPIPlugins() []string { return []string{"none", "pmi2", "pmix", "cray_shasta"} }

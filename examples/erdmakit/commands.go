package main

import "github.com/spf13/cobra"

// subcommands lists every subcommand, each built in its own file.
func subcommands(g *globals) []*cobra.Command {
	return []*cobra.Command{
		newDoctorCmd(g),
		newDevicesCmd(g),
		newRecordCmd(g),
		newGPUsCmd(g),
		newTopoCmd(g),
		newParseCmd(g),
		newNCCLCmd(g),
		newBwCmd(g),
		newPerftestCmd(g),
		newStatCmd(g),
		newExporterCmd(g),
		newFleetCmd(g),
		newKubeCmd(g),
		newReportCmd(g),
		newERICmd(g),
		newSetupCmd(g),
		newVersionCmd(g),
	}
}

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder: the erdma inventory work replaces this file.
func newDevicesCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "devices", Short: "List RDMA devices, ports, GIDs and netdevs",
		RunE: func(cmd *cobra.Command, args []string) error { return errors.New("not yet") }}
}

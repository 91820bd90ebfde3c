package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder: the erdma doctor work replaces this file.
func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "doctor", Short: "Check every step of the eRDMA guide on this host",
		RunE: func(cmd *cobra.Command, args []string) error { return errors.New("not yet") }}
}

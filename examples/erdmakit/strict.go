package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strictCommands makes every unknown command a usage error (exit 3): cobra
// prints the group's help and returns success for `erdmakit bw bogus`,
// `erdmakit completion foo` and `erdmakit help nosuch`, which a script would
// read as "ok".
func strictCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.RunE = groupRun
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Run = nil
			c.RunE = helpRun
		}
	}
}

// groupRun runs for a command that only groups others: with no argument it
// prints its help, with one it names the unknown command.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return couldNotRun(unknownCommand(cmd, args[0]))
}

func unknownCommand(cmd *cobra.Command, name string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("unknown command %q for %q (have: %s)", name, cmd.CommandPath(), strings.Join(names, ", "))
}

// helpRun is `erdmakit help [command...]`, failing on a topic that does not exist.
func helpRun(c *cobra.Command, args []string) error {
	root := c.Root()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == nil {
		return couldNotRun(fmt.Errorf("help: no such command %q", strings.Join(args, " ")))
	}
	if len(rest) > 0 {
		return couldNotRun(fmt.Errorf("help: %w", unknownCommand(cmd, rest[0])))
	}
	cmd.InitDefaultHelpFlag()
	return cmd.Help()
}

package main

import (
	"strings"
	"testing"
)

// TestUnknownCommandExits3: an unknown subcommand or help topic is a usage
// error, never a silent success.
func TestUnknownCommandExits3(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"parse", "bogus", "x"},
		{"bw", "bogus"},
		{"nccl", "bogus"},
		{"fleet", "bogus"},
		{"completion", "foo"},
		{"help", "nosuch"},
		{"help", "bw", "nosuch"},
	} {
		code, _, stderr := runCLI(args...)
		if code != ExitUnknown {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUnknown)
		}
		if !strings.Contains(stderr, "unknown command") && !strings.Contains(stderr, "no such command") {
			t.Errorf("%v: stderr %q does not name the unknown command", args, stderr)
		}
	}
	for _, args := range [][]string{{"bw"}, {"help", "bw"}, {"help"}, {"completion", "bash"}} {
		if code, out, _ := runCLI(args...); code != ExitOK || out == "" {
			t.Errorf("%v: exit %d, output %d bytes; want help and exit 0", args, code, len(out))
		}
	}
}

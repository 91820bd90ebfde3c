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

// TestHelpAndFormatFixes: bw mesh --plot described the sweep plot; nccl
// env refused --format json while doctor took it.
func TestHelpAndFormatFixes(t *testing.T) {
	_, out, _ := runCLI("bw", "mesh", "--help")
	if !strings.Contains(out, "heat map into this file") || strings.Contains(out, "against message size") {
		t.Errorf("bw mesh --plot help:\n%s", out)
	}
	code, outFlag, _ := runCLI("nccl", "env", "--json", "--root", hostDir("ebmgn8is-healthy"))
	code2, outFormat, stderr := runCLI("nccl", "env", "--format", "json", "--root", hostDir("ebmgn8is-healthy"))
	if code2 != code || outFormat != outFlag || !strings.HasPrefix(outFormat, "{") {
		t.Errorf("nccl env --format json: exit %d (--json %d), stderr %s", code2, code, stderr)
	}
	if code, _, _ := runCLI("nccl", "env", "--format", "yaml", "--root", hostDir("ebmgn8is-healthy")); code != ExitUnknown {
		t.Errorf("--format yaml: exit %d", code)
	}
}

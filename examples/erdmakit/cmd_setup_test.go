package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/setup"
)

// snapshot is every file under dir with its content and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			c += " " + string(b)
		}
		out[rel] = c
		return nil
	}))
	return out
}

const noMetadata = "http://127.0.0.1:1" // refused at once: no metadata service

// TestSetupDryRunChangesNothing: the plan of a host's every stage leaves
// its root byte for byte as it was, and exits 0 when no stage is blocked.
func TestSetupDryRunChangesNothing(t *testing.T) {
	dir := fixture.Host(t, "memlock-64k")
	before := snapshot(t, dir)
	code, out, stderr := runCLI("setup", "--dry-run", "--root", dir, "--metadata-url", noMetadata, "--network-stack", "networkd")
	assert.Equal(t, ExitOK, code, "stderr: %s\n%s", stderr, out)
	assert.Contains(t, out, "erdmakit setup: plan (dry run: nothing is changed)")
	assert.Contains(t, out, "/etc/security/limits.d/90-erdmakit-memlock.conf")
	assert.Contains(t, out, "verdict: planned:")
	assert.Equal(t, before, snapshot(t, dir), "the dry run changed nothing under the root")
}

// TestSetupWithoutATerminalOrYesExits3: applying asks once on a terminal;
// with neither a terminal nor --yes nothing is changed and the exit is 3.
func TestSetupWithoutATerminalOrYesExits3(t *testing.T) {
	dir := fixture.Host(t, "memlock-64k")
	before := snapshot(t, dir)
	var out, errb bytes.Buffer
	g := &globals{root: dir, stdout: &out, stderr: &errb}
	f := &setupFlags{metadataURL: noMetadata, networkStack: "networkd"}
	err := runSetup(context.Background(), g, f, strings.NewReader("y\n"))
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, ExitUnknown, ee.code)
	assert.Contains(t, ee.Error(), "no terminal to ask on and no --yes")
	assert.Equal(t, before, snapshot(t, dir))
}

// TestSetupOnADirectoryRootThenRerun: --yes writes the files of the
// selected stages under a directory root, lists how to revert each, and
// the rerun changes nothing.
func TestSetupOnADirectoryRootThenRerun(t *testing.T) {
	dir := fixture.Host(t, "memlock-64k")
	args := []string{"setup", "--yes", "--json", "--root", dir, "--metadata-url", noMetadata, "--only", "limits"}
	code, out, stderr := runCLI(args...)
	assert.Equal(t, ExitFail, code, "the recorded memlock stays 64 KiB: not proven; stderr %s", stderr)
	var res setup.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, 2, res.Changed)
	assert.Equal(t, setup.VerdictNotProven, res.Verdict)
	require.Len(t, res.Reverts, 2)
	assert.Equal(t, "rm /etc/systemd/system.conf.d/90-erdmakit-memlock.conf", res.Reverts[0].Command)
	b, err := os.ReadFile(filepath.Join(dir, "etc/security/limits.d/90-erdmakit-memlock.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "root soft memlock unlimited")

	code, out, _ = runCLI(args...)
	assert.Equal(t, ExitFail, code)
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Zero(t, res.Changed, "the rerun changes nothing")
	assert.Empty(t, res.Reverts)
}

// TestSetupRefusesBadInput: unknown stages, stacks and jumbo values, and
// applying to an archive, are exit 3 naming what was wrong.
func TestSetupRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"setup", "--dry-run", "--only", "nope"}, `no stage "nope"`},
		{[]string{"setup", "--dry-run", "--network-stack", "wicked"}, `--network-stack "wicked"`},
		{[]string{"setup", "--dry-run", "--jumbo-frames", "maybe"}, `--jumbo-frames "maybe"`},
		{[]string{"setup", "--yes", "--root", "../../testdata/hosts/memlock-64k.tar.gz"}, "is an archive"},
		{[]string{"doctor", "--dry-run"}, "use it with --fix"},
		// Values from outside: refused before anything is planned.
		{[]string{"setup", "--dry-run", "--root", "../../testdata/hosts/ebmgn8is-healthy.tar.gz", "--only", "os", "--network-stack", "netplan", "--netdev", "../x"}, `netdev name "../x"`},
		{[]string{"setup", "--dry-run", "--root", "../../testdata/hosts/ebmgn8is-healthy.tar.gz", "--only", "os", "--network-stack", "ifcfg", "--netdev", "0123456789abcdefg"}, "longer than 15 bytes"},
		{[]string{"doctor", "--fix", "--dry-run", "--root", "../../testdata/hosts/mtu-mismatch.tar.gz", "--netdev", "a b"}, `netdev name "a b"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		assert.Equal(t, ExitUnknown, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// TestDoctorFixPlansOnlyTheFailingChecks: doctor --fix --dry-run on a host
// whose only failure is memlock plans the limits stage and nothing else.
func TestDoctorFixPlansOnlyTheFailingChecks(t *testing.T) {
	code, out, stderr := runCLI("doctor", "--fix", "--dry-run", "--json", "--root", "../../testdata/hosts/memlock-64k.tar.gz")
	require.Equal(t, ExitOK, code, "stderr: %s", stderr)
	var res setup.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	for _, s := range res.Stages {
		switch s.Name {
		case "limits":
			assert.Equal(t, setup.StatusPlanned, s.Status)
		case "verify":
			assert.Equal(t, setup.StatusPlanned, s.Status)
		default:
			assert.Equal(t, setup.StatusSkipped, s.Status, s.Name)
		}
	}
}

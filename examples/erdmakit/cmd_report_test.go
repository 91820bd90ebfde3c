package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The doctor's --json, through report: the page names the failing check
// and the command exits with the verdict.
func TestReportOfTheDoctorsJSON(t *testing.T) {
	code, doc, _ := runCLI("doctor", "--json", "--no-metadata", "--root", filepath.Join("..", "..", "testdata", "hosts", "no-peermem.tar.gz"))
	require.Equal(t, ExitFail, code)
	dir := t.TempDir()
	in := filepath.Join(dir, "doctor.json")
	require.NoError(t, os.WriteFile(in, []byte(doc), 0o644))
	page := filepath.Join(dir, "page.html")

	code, _, stderr := runCLI("report", "-o", page, "--redact", in)
	assert.Equal(t, ExitFail, code, stderr)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), "gdr-peermem"), "the failing check is on the page")
	assert.False(t, strings.Contains(string(b), "i-bp1erdmakit0000001"), "--redact: the instance id is not")

	// stdin, to stdout.
	code, out, _ := runParseCLI(t, doc, "report", "-")
	assert.Equal(t, ExitFail, code)
	assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))

	// Not a result: exit 3, the file named.
	bad := filepath.Join(dir, "argv.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"argv":[],"command":"","env":[]}`), 0o644))
	code, _, stderr = runCLI("report", "-o", page, in, bad)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, bad)
	code, _, stderr = runCLI("report", filepath.Join(dir, "absent.json"))
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "absent.json")
}

// The inputs together are bounded, not only each one (report-2 item 1):
// three 50 MiB files (sparse: nothing is written or read) are refused at
// once with the limit named, before any is read.
func TestReportBoundsTheInputsTogether(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("big%d.json", i))
		require.NoError(t, os.WriteFile(f, nil, 0o644))
		require.NoError(t, os.Truncate(f, 50<<20))
		args = append(args, f)
	}
	code, _, stderr := runCLI(append([]string{"report", "-o", filepath.Join(dir, "page.html")}, args...)...)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "big2.json")
	assert.Contains(t, stderr, "128 MiB (report.MaxTotalBytes)")
	assert.NoFileExists(t, filepath.Join(dir, "page.html"))
}

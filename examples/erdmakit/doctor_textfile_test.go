package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// requireTool returns a program's path; under CI its absence is a failure.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI (Debian %s, .ci/deps.sh): %v", name, pkg, err)
		}
		t.Skipf("%s not installed (Debian %s)", name, pkg)
	}
	return p
}

// TestDoctorTextfileRecipe runs the documented node_exporter recipe on a
// failing host with the real promtool and node_exporter: the old recipe
// (`> f.tmp && mv`) never published a failure, since the doctor's exit 2
// skipped the mv and the collector kept the last "ok".
func TestDoctorTextfileRecipe(t *testing.T) {
	promtool := requireTool(t, "promtool", "prometheus")
	exporter := requireTool(t, "prometheus-node-exporter", "prometheus-node-exporter")
	bin := buildCLI(t)
	dir := t.TempDir()
	prom := filepath.Join(dir, "erdmakit.prom")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The last run was healthy: the collector's file says ok.
	healthy, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	failing, err := filepath.Abs(hostDir("no-peermem"))
	require.NoError(t, err)
	recipe := func(root string) error {
		// The line of docs/doctor.md, as cron runs it.
		line := fmt.Sprintf("%s doctor --no-metadata --root %s --format prom --output %s", bin, root, prom)
		return exec.CommandContext(ctx, "sh", "-c", line).Run()
	}
	require.NoError(t, recipe(healthy))
	err = recipe(failing)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, ExitFail, ee.ExitCode(), "the recipe still exits with the status")

	f, err := os.Open(prom)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	f.Close()
	require.NoError(t, err, "promtool check metrics: %s", out)

	port := fixture.FreePort(t)
	ne := exec.CommandContext(ctx, exporter, "--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+dir, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	ne.Stdout, ne.Stderr = io.Discard, io.Discard
	require.NoError(t, ne.Start())
	defer func() { ne.Process.Kill(); ne.Wait() }()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond)
	assert.Contains(t, body, "\nerdmakit_doctor_status 2\n", "node_exporter publishes the failure")
	assert.Contains(t, body, `erdmakit_doctor_check{id="gdr-peermem"} 2`)
	assert.Contains(t, body, `node_textfile_scrape_error 0`)
	assert.False(t, strings.Contains(body, `erdmakit_doctor_status 0`))
	assert.Contains(t, body, "\nerdmakit_doctor_up 1\n")
	assert.Contains(t, body, "\nerdmakit_doctor_last_run_timestamp_seconds ")

	// hardening-3 item 15: a run that cannot read the host left the last
	// file in place, and node_exporter kept publishing its verdict. Now the
	// file says the doctor could not run, and when.
	before := time.Now().Add(-time.Second).Unix()
	err = recipe(filepath.Join(dir, "no-such-host"))
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, ExitUnknown, ee.ExitCode())
	b, err := os.ReadFile(prom)
	require.NoError(t, err)
	cmd = exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(b))
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s\n%s", out, b)
	require.Eventually(t, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, "\nerdmakit_doctor_up 0\n")
	}, 20*time.Second, 100*time.Millisecond, "node_exporter publishes that the doctor could not run")
	assert.Contains(t, body, "\nerdmakit_doctor_status 3\n")
	assert.NotContains(t, body, "erdmakit_doctor_check{", "no check of the last run is published as current")
	var ts float64
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "erdmakit_doctor_last_run_timestamp_seconds "); ok {
			_, err := fmt.Sscanf(v, "%g", &ts)
			require.NoError(t, err, l)
		}
	}
	assert.GreaterOrEqual(t, int64(ts), before, "the timestamp is this run's")
	assert.Contains(t, body, `node_textfile_scrape_error 0`)
}

// TestDoctorOutputPromNameImpliesTheFormat: `--output X.prom` without
// --format wrote the text table, and node_exporter then reported
// node_textfile_scrape_error 1 (issue 27 item 19). The name implies prom; a
// format asked for that contradicts it is refused.
func TestDoctorOutputPromNameImpliesTheFormat(t *testing.T) {
	promtool := requireTool(t, "promtool", "prometheus")
	dir := t.TempDir()
	prom := filepath.Join(dir, "erdmakit.prom")
	root := hostDir("ebmgn8is-healthy")

	code, _, stderr := runCLI("doctor", "--no-metadata", "--root", root, "--output", prom)
	require.Equal(t, ExitOK, code, stderr)
	b, err := os.ReadFile(prom)
	require.NoError(t, err)
	assert.Contains(t, string(b), "\nerdmakit_doctor_status 0\n")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(b))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s", out)

	for _, args := range [][]string{{"--format", "table"}, {"--json"}, {"--format", "json"}} {
		other := filepath.Join(dir, "other.prom")
		code, _, stderr := runCLI(append([]string{"doctor", "--no-metadata", "--root", root, "--output", other}, args...)...)
		assert.Equal(t, ExitUnknown, code, "%v", args)
		assert.Contains(t, stderr, "--format prom", "%v", args)
		assert.NoFileExists(t, other, "%v", args)
	}
}

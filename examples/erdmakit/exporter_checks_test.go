package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkIDs returns the ids of the erdmakit_doctor_check samples in a
// Prometheus text.
func checkIDs(text string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^erdmakit_doctor_check\{id="([^"]+)"\}`).FindAllStringSubmatch(text, -1) {
		ids = append(ids, m[1])
	}
	sort.Strings(ids)
	return ids
}

// TestExporterPublishesTheDoctorsChecks: the exporter's erdmakit_doctor_check
// ids are `doctor --format prom`'s with the same --cloud (hardening-3 item
// 20: the exporter published 19 where the doctor published 20; the
// difference was the cloud checks, which the exporter runs only when asked,
// since they call the ECS API: docs/monitor.md).
func TestExporterPublishesTheDoctorsChecks(t *testing.T) {
	bin := buildCLI(t)
	root := hostDir("ebmgn8is-healthy")
	for _, cloud := range []string{"off", "on"} {
		t.Run(cloud, func(t *testing.T) {
			_, doc, stderr := runCLI("doctor", "--root", root, "--no-metadata", "--format", "prom", "--cloud", cloud)
			want := checkIDs(doc)
			require.NotEmpty(t, want, stderr)
			if cloud == "on" {
				assert.Contains(t, want, "eri-mode")
			} else {
				assert.NotContains(t, want, "eri-mode")
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd, addr, waited := startExporter(t, ctx, bin, root, "--cloud", cloud)
			defer func() { _ = cmd.Process.Kill(); <-waited }()
			resp, err := http.Get("http://" + addr + "/metrics")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, want, checkIDs(string(body)))
		})
	}
}

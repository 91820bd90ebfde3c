package report

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateText = flag.Bool("update-text", false, "rewrite testdata/text/*.txt from the current tables")

func TestTablesMatchGolden(t *testing.T) {
	hint := func(f health.Finding) string {
		if f.Severity == health.Fail {
			return "rerun with --root DIR"
		}
		return ""
	}
	cases := []struct {
		golden, fixture string
		write           func(w io.Writer, v any) error
	}{
		{"doctor-healthy", "doctor-healthy.json", func(w io.Writer, v any) error { return doctor.WriteTable(w, v.(*erdma.Report), doctor.TableOptions{}) }},
		{"doctor-healthy-verbose", "doctor-healthy.json", func(w io.Writer, v any) error { return doctor.WriteTable(w, v.(*erdma.Report), doctor.TableOptions{Verbose: true}) }},
		{"doctor-no-peermem", "doctor-no-peermem.json", func(w io.Writer, v any) error { return doctor.WriteTable(w, v.(*erdma.Report), doctor.TableOptions{}) }},
		{"doctor-no-peermem-color-hint", "doctor-no-peermem.json", func(w io.Writer, v any) error { return doctor.WriteTable(w, v.(*erdma.Report), doctor.TableOptions{Color: true, Hint: hint}) }},
		{"findings-no-peermem", "doctor-no-peermem.json", func(w io.Writer, v any) error { return health.WriteTable(w, v.(*erdma.Report).Findings, health.TableOptions{}) }},
		{"fleet-doctor-4", "fleet-doctor-4.json", func(w io.Writer, v any) error { return fleet.WriteTable(w, v.(*fleet.FleetReport), false) }},
		{"fleet-doctor-4-color", "fleet-doctor-4.json", func(w io.Writer, v any) error { return fleet.WriteTable(w, v.(*fleet.FleetReport), true) }},
		{"fleet-prove-4", "fleet-prove-4.json", func(w io.Writer, v any) error { return fleet.WriteProof(w, v.(*fleet.Proof), false) }},
		{"fleet-prove-4-color", "fleet-prove-4.json", func(w io.Writer, v any) error { return fleet.WriteProof(w, v.(*fleet.Proof), true) }},
		{"bw-mesh-4", "bw-mesh-4.json", func(w io.Writer, v any) error { return fleet.WriteMeshTable(w, v.(*fleet.MeshReport)) }},
		{"bw-loopback", "bw-loopback.json", func(w io.Writer, v any) error { return perf.WriteTable(w, v.(*perf.Report), false) }},
		{"bw-loopback-color", "bw-loopback.json", func(w io.Writer, v any) error { return perf.WriteTable(w, v.(*perf.Report), true) }},
		{"bw-lat", "bw-lat.json", func(w io.Writer, v any) error { return perf.WriteLatencyTable(w, v.(*perf.LatencyReport), false) }},
		{"bw-lat-color", "bw-lat.json", func(w io.Writer, v any) error { return perf.WriteLatencyTable(w, v.(*perf.LatencyReport), true) }},
		{"perftest-loopback-fail", "perftest-loopback-fail.json", func(w io.Writer, v any) error { return perftest.WriteTable(w, v.(*perftest.Summary), false, false) }},
		{"perftest-loopback-fail-serve-color", "perftest-loopback-fail.json", func(w io.Writer, v any) error { return perftest.WriteTable(w, v.(*perftest.Summary), true, true) }},
		{"perftest-lat-fail", "perftest-lat-fail.json", func(w io.Writer, v any) error { return perftest.WriteLatencyTable(w, v.(*perftest.LatencySummary), false, false) }},
		{"perftest-lat-fail-serve-color", "perftest-lat-fail.json", func(w io.Writer, v any) error { return perftest.WriteLatencyTable(w, v.(*perftest.LatencySummary), true, true) }},
		{"parse-nccl-B02", "parse-nccl-B02.json", func(w io.Writer, v any) error { return nccl.WriteResultTable(w, v.(*ncclog.TestResult)) }},
		{"nccl-run-B02", "nccl-run-B02.json", func(w io.Writer, v any) error { return oldNCCLRun(w, v.(*nccl.RunReport), false, false) }},
		{"nccl-run-B02-rows-shown-color", "nccl-run-B02.json", func(w io.Writer, v any) error { return oldNCCLRun(w, v.(*nccl.RunReport), true, true) }},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			in, err := ReadFile(context.Background(), filepath.Join("testdata", c.fixture))
			require.NoError(t, err)
			var b strings.Builder
			require.NoError(t, c.write(&b, in.Value()))
			path := filepath.Join("testdata", "text", c.golden+".txt")
			if *updateText {
				require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), b.String())
		})
	}
}

// oldNCCLRun is the CLI's printNCCLReport as it was.
func oldNCCLRun(w io.Writer, rep *nccl.RunReport, rowsShown, color bool) error {
	if !rowsShown && len(rep.Rows) > 0 {
		_ = nccl.WriteResultTable(w, rep.TestResult)
	}
	if rep.AvgBusBW > 0 {
		fmt.Fprintf(w, "avg bus bandwidth %.3f GB/s\n", rep.AvgBusBW)
	}
	if rowsShown || len(rep.Rows) > 0 {
		fmt.Fprintln(w)
	}
	_ = health.WriteTable(w, rep.Findings, health.TableOptions{Color: color})
	word := string(rep.Status)
	if color {
		word = render.Severity(word)
	}
	fmt.Fprintln(w, "status:", word)
	return nil
}

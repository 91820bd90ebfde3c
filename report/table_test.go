package report

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateText = flag.Bool("update-text", false, "rewrite testdata/text/*.txt from the current tables")

// TestTablesMatchGolden prints every result fixture as the CLI does and
// compares it with testdata/text, which the domain packages' own
// WriteTable functions wrote before the tables moved here: the CLI's text
// output is byte for byte what it was, colours included.
func TestTablesMatchGolden(t *testing.T) {
	hint := func(f health.Finding) string {
		if f.Severity == health.Fail {
			return "rerun with --root DIR"
		}
		return ""
	}
	color := TableOptions{Color: true}
	cases := []struct {
		golden, fixture string
		write           func(w io.Writer, v any) error
	}{
		{"doctor-healthy", "doctor-healthy.json", doctorWith(TableOptions{})},
		{"doctor-healthy-verbose", "doctor-healthy.json", doctorWith(TableOptions{Verbose: true})},
		{"doctor-no-peermem", "doctor-no-peermem.json", doctorWith(TableOptions{})},
		{"doctor-no-peermem-color-hint", "doctor-no-peermem.json", doctorWith(TableOptions{Color: true, Hint: hint})},
		{"findings-no-peermem", "doctor-no-peermem.json", func(w io.Writer, v any) error {
			return WriteFindingsTable(w, v.(*erdma.Report).Findings, TableOptions{})
		}},
		{"fleet-doctor-4", "fleet-doctor-4.json", fleetWith(TableOptions{})},
		{"fleet-doctor-4-color", "fleet-doctor-4.json", fleetWith(color)},
		{"fleet-prove-4", "fleet-prove-4.json", proofWith(TableOptions{})},
		{"fleet-prove-4-color", "fleet-prove-4.json", proofWith(color)},
		{"bw-mesh-4", "bw-mesh-4.json", meshWith(TableOptions{})},
		{"bw-loopback", "bw-loopback.json", func(w io.Writer, v any) error { return WriteBandwidthTable(w, v.(*perf.Report), TableOptions{}) }},
		{"bw-loopback-color", "bw-loopback.json", func(w io.Writer, v any) error { return WriteBandwidthTable(w, v.(*perf.Report), color) }},
		{"bw-lat", "bw-lat.json", func(w io.Writer, v any) error { return WriteLatencyTable(w, v.(*perf.LatencyReport), TableOptions{}) }},
		{"bw-lat-color", "bw-lat.json", func(w io.Writer, v any) error { return WriteLatencyTable(w, v.(*perf.LatencyReport), color) }},
		{"perftest-loopback-fail", "perftest-loopback-fail.json", func(w io.Writer, v any) error {
			return WritePerftestTable(w, v.(*perftest.Summary), TableOptions{})
		}},
		{"perftest-loopback-fail-serve-color", "perftest-loopback-fail.json", func(w io.Writer, v any) error {
			return WritePerftestTable(w, v.(*perftest.Summary), TableOptions{Serve: true, Color: true})
		}},
		{"perftest-lat-fail", "perftest-lat-fail.json", func(w io.Writer, v any) error {
			return WritePerftestLatencyTable(w, v.(*perftest.LatencySummary), TableOptions{})
		}},
		{"perftest-lat-fail-serve-color", "perftest-lat-fail.json", func(w io.Writer, v any) error {
			return WritePerftestLatencyTable(w, v.(*perftest.LatencySummary), TableOptions{Serve: true, Color: true})
		}},
		{"parse-nccl-B02", "parse-nccl-B02.json", func(w io.Writer, v any) error { return WriteNCCLTestsTable(w, v.(*ncclog.TestResult), TableOptions{}) }},
		{"nccl-run-B02", "nccl-run-B02.json", func(w io.Writer, v any) error { return WriteNCCLRunTable(w, v.(*nccl.RunReport), TableOptions{}) }},
		{"nccl-run-B02-rows-shown-color", "nccl-run-B02.json", func(w io.Writer, v any) error {
			return WriteNCCLRunTable(w, v.(*nccl.RunReport), TableOptions{RowsShown: true, Color: true})
		}},
		{"parse-nccl-tests-log-B04", "parse-nccl-B04.json", func(w io.Writer, v any) error {
			return WriteNCCLTestsLogTable(w, v.(*ncclog.TestResult), TableOptions{})
		}},
		{"parse-nccl-log-C05", "parse-nccl-log-C05.json", func(w io.Writer, v any) error {
			return WriteNCCLLogTable(w, v.(*ncclog.Summary), TableOptions{})
		}},
		{"parse-perftest-A02", "parse-perftest-A02.json", func(w io.Writer, v any) error {
			return WritePerftestLogTable(w, v.(*perftest.Report), TableOptions{})
		}},
		{"parse-topo-E01", "parse-topo-E01.json", func(w io.Writer, v any) error { return WriteTopoTable(w, v.(*smitopo.Matrix), TableOptions{}) }},
		{"setup-dry-memlock-64k", "setup-dry-memlock-64k.json", func(w io.Writer, v any) error {
			return WriteSetupTable(w, v.(*SetupResult), TableOptions{})
		}},
		{"sim-16-prove", "sim:0", proofWith(TableOptions{})},
		{"sim-16-fleet-doctor", "sim:1", fleetWith(TableOptions{})},
		{"sim-16-mesh", "sim:2", meshWith(TableOptions{})},
	}
	sim := fleetInputs(t, 16)
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			var in Input
			if i, ok := strings.CutPrefix(c.fixture, "sim:"); ok {
				in = sim[int(i[0]-'0')]
			} else {
				var err error
				in, err = ReadFile(context.Background(), filepath.Join("testdata", c.fixture))
				require.NoError(t, err)
			}
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

func doctorWith(o TableOptions) func(io.Writer, any) error {
	return func(w io.Writer, v any) error { return WriteDoctorTable(w, v.(*erdma.Report), o) }
}

func fleetWith(o TableOptions) func(io.Writer, any) error {
	return func(w io.Writer, v any) error { return WriteFleetTable(w, v.(*fleet.FleetReport), o) }
}

func proofWith(o TableOptions) func(io.Writer, any) error {
	return func(w io.Writer, v any) error { return WriteProofTable(w, v.(*fleet.Proof), o) }
}

func meshWith(o TableOptions) func(io.Writer, any) error {
	return func(w io.Writer, v any) error { return WriteMeshTable(w, v.(*fleet.MeshReport), o) }
}

func TestFindingsTableThenProblemsWithEvidenceFixAndHint(t *testing.T) {
	fs := []health.Finding{
		{ID: "port-active", Severity: health.OK, Summary: "all ports ACTIVE", Evidence: []string{"state: 4: ACTIVE"}},
		{ID: "memlock", Severity: health.Fail, Summary: "memlock 64 KiB", Evidence: []string{"RLIMIT_MEMLOCK soft 64 KiB"}, Remediation: "ulimit -l unlimited"},
	}
	var b strings.Builder
	hint := func(f health.Finding) string {
		if f.ID == "memlock" {
			return "rerun with --root"
		}
		return ""
	}
	require.NoError(t, WriteFindingsTable(&b, fs, TableOptions{Hint: hint}))
	assert.Equal(t, `RESULT  CHECK        SUMMARY
ok      port-active  all ports ACTIVE
fail    memlock      memlock 64 KiB

fail memlock: memlock 64 KiB
    read: RLIMIT_MEMLOCK soft 64 KiB
    fix:  ulimit -l unlimited
    hint: rerun with --root
`, b.String())

	b.Reset()
	require.NoError(t, WriteFindingsTable(&b, fs[:1], TableOptions{Verbose: true}))
	assert.Contains(t, b.String(), "\nok port-active: all ports ACTIVE\n    read: state: 4: ACTIVE\n", "verbose shows every finding")
}

func TestPerftestTableClientRowsAndStatus(t *testing.T) {
	f, err := os.Open("../perf/perftest/testdata/A03_ib_write_bw_client_q4_rdma_cm_gbits_roce_dgx_spark.txt")
	require.NoError(t, err)
	defer f.Close()
	rep, err := perftest.Parse(context.Background(), f)
	require.NoError(t, err)
	runs := []perftest.Run{{Device: "erdma_0", Port: 18515, Client: rep, Attempts: 1}, {Device: "erdma_1", Port: 18516, Attempts: 2, Error: "ib_write_bw: exit status 1"}}
	sum := perftest.Judge(runs, 0, false)
	var b strings.Builder
	require.NoError(t, WritePerftestTable(&b, sum, TableOptions{}))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Equal(t, "DEVICE   PORT   SIZE   ITERATIONS  AVG_GBPS  PEAK_GBPS  MPPS    ATTEMPTS", strings.TrimRight(lines[0], " "))
	assert.Contains(t, lines[len(lines)-2], "erdma_1  18516  -")
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "status: fail (total "), lines[len(lines)-1])
}

func TestMeshTableMatrixAndCulprits(t *testing.T) {
	v := 12.5
	rep := &fleet.MeshReport{Hosts: []string{"a", "b", "c"}, Rounds: 3, MedianGbps: 12.5, ExpectGbps: 20,
		Results:   make([]fleet.PairResult, 3),
		Matrix:    [][]*float64{{nil, &v, nil}, {&v, nil, &v}, {nil, &v, nil}},
		DeadHosts: []fleet.Culprit{{Hosts: []string{"c"}, Reason: "never answered", Evidence: []string{"pair a-c failed", "rank 2 silent"}}},
		Errors:    []string{"rank 2: timeout"}}
	var b strings.Builder
	require.NoError(t, WriteMeshTable(&b, rep, TableOptions{}))
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "3 hosts, 3 rounds, 3 pair tests; median 12.50 Gbit/s, expected 20.00\n"), out)
	assert.Contains(t, out, "\nGBPS  a     b     c\na     -     12.5  fail\n")
	assert.Contains(t, out, "dead host  c      never answered  pair a-c failed; rank 2 silent\n")
	assert.True(t, strings.HasSuffix(out, "rendezvous: rank 2: timeout\n"), out)

	b.Reset()
	rep.DeadHosts, rep.Errors = nil, nil
	require.NoError(t, WriteMeshTable(&b, rep, TableOptions{}))
	assert.True(t, strings.HasSuffix(b.String(), "\nno outliers: every pair within the expectation and the fleet median\n"))
}

// TestMeshTableOfAHostileReport: a mesh JSON whose matrix or transient
// pairs point past its host list (a damaged or hostile file given to
// `erdmakit report`, or to an importer) prints, it does not panic.
func TestMeshTableOfAHostileReport(t *testing.T) {
	v := 1.0
	rep := &fleet.MeshReport{Hosts: []string{"a"}, Matrix: [][]*float64{{nil}, {&v}},
		Transient: []fleet.Pair{{Server: 0, Client: 5}}}
	var b strings.Builder
	require.NoError(t, WriteMeshTable(&b, rep, TableOptions{}))
	assert.Contains(t, b.String(), "position 1")
	assert.Contains(t, b.String(), "a <-> position 5")
}

// TestProofTableVerdictStagesCulpritsAndFixes: the table says the
// verdict, every stage, each culprit with its fix, the hosts not ok (or on
// a bad link) only.
func TestProofTableVerdictStagesCulpritsAndFixes(t *testing.T) {
	p := fleetInputs(t, 16)[0].Value().(*fleet.Proof)
	p.Culprits[0].Devices = []string{"erdma_1"}
	var b strings.Builder
	require.NoError(t, WriteProofTable(&b, p, TableOptions{}))
	out := b.String()
	assert.Contains(t, out, "verdict BROKEN")
	for _, s := range []string{"doctor", "mesh", "nccl"} {
		assert.Regexp(t, "(?m)^"+s+" ", out)
	}
	assert.Contains(t, out, "1. fail host gpu003: doctor: gdr-peermem: GPUDirect RDMA not ready")
	assert.Contains(t, out, " (gdr-peermem)\n")
	assert.Contains(t, out, "    eri:  erdma_1")
	assert.Contains(t, out, "Hosts not ok, or on a bad link (5 of 16)")
	assert.NotContains(t, out, "gpu000 ", "hosts that are ok are not listed")
	assert.Contains(t, out, "verdict: broken (status fail)")

	p.Interrupted, p.Authenticated = true, false
	b.Reset()
	require.NoError(t, WriteProofTable(&b, p, TableOptions{}))
	assert.Contains(t, b.String(), "\nthe ranks were not authenticated (ERDMAKIT_FLEET_SECRET not set)\n")
	assert.Contains(t, b.String(), "verdict: broken (interrupted: stages not reached are listed) (status fail)")
}

func TestTopoComparisonTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    smitopo.Comparison
		want string
	}{
		{"agree", smitopo.Comparison{}, "nvidia-smi agrees on every GPU<->NIC and GPU<->GPU PCIe cell both list.\n"},
		{"differ", smitopo.Comparison{
			Differences: []smitopo.Difference{{A: "GPU0", B: "erdma_0", Ours: smitopo.LinkNODE, Their: smitopo.LinkSYS}},
			OnlyTheirs:  []string{"mlx5_0"}, OnlyOurs: []string{"erdma_1"}},
			"A     B        ERDMAKIT (SYSFS)  NVIDIA-SMI\n" +
				"GPU0  erdma_0  NODE              SYS\n" +
				"only in nvidia-smi: [mlx5_0]\n" +
				"only in erdmakit: [erdma_1]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, WriteTopoComparisonTable(&b, &tc.c, TableOptions{}))
			assert.Equal(t, tc.want, b.String())
		})
	}
}

package nccl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ncclver"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func byFindingID(fs []health.Finding) map[string]health.Finding {
	out := map[string]health.Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

// TestDiagnoseRunKnowsWhatWasPassed: a run that passed NCCL_GRAPH_FILE is
// diagnosed with it even when the log does not print the environment.
func TestDiagnoseRunKnowsWhatWasPassed(t *testing.T) {
	// Two NICs listed, channels on the first only, no NCCL_GRAPH_FILE line.
	s := analyzeFile(t, "nccl_log_two_nics_first_only.txt")
	require.Empty(t, s.Env)
	res := &TestResult{NCCL: s, Rows: []Row{{Size: 1 << 20}}}
	run := &RunResult{Result: res, Env: []Var{{Name: "NCCL_GRAPH_FILE", Value: "/root/g.xml"}}}
	f := byFindingID(DiagnoseRun(run, Expectation{}))["nccl-nics"]
	assert.Contains(t, f.Summary, "although NCCL_GRAPH_FILE was set")
	assert.Contains(t, f.Remediation, "NCCL_GRAPH_FILE=/root/g.xml did not take")
	assert.Empty(t, s.Env, "the run's result is not changed")
	rep := NewRunReport(run, Expectation{})
	assert.Equal(t, run.Env, rep.Env)
}

func TestDiagnoseBlackwellOldNCCL(t *testing.T) {
	rtx := []ncclog.TestRank{{Rank: 0, Host: "gpu-a", Device: 0, GPU: "NVIDIA RTX PRO 5000 Blackwell"}}
	h100 := []ncclog.TestRank{{Rank: 0, Host: "gpu-a", Device: 0, GPU: "NVIDIA H100 80GB HBM3"}}
	// include/checks.h: WARN("Cuda failure '%s'", cudaGetErrorString(err)).
	cudaFail := "gpu-a:1:1 [0] NCCL INFO NCCL version %s+cuda12.2\ngpu-a:1:1 [0] init.cc:1 NCCL WARN Cuda failure 'invalid argument'\n"
	logOf := func(version string) *LogSummary {
		s, err := ncclog.Analyze(context.Background(), strings.NewReader(fmt.Sprintf(cudaFail, version)))
		require.NoError(t, err)
		return s
	}
	quiet, err := ncclog.Analyze(context.Background(), strings.NewReader("gpu-a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.2\n"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		res  *TestResult
		want bool
	}{
		{"2.21.5 on Blackwell with the CUDA failure", &TestResult{Devices: rtx, NCCL: logOf("2.21.5")}, true},
		{"2.21.5 on Blackwell, no failure yet", &TestResult{Devices: rtx, NCCL: quiet}, true},
		{"2.21.5, the failure, GPU unknown", &TestResult{NCCL: logOf("2.21.5")}, true},
		{"2.27.7 on Blackwell", &TestResult{Devices: rtx, NCCL: logOf("2.27.7")}, false},
		{"2.21.5 on H100, no failure", &TestResult{Devices: h100, NCCL: quiet}, false},
		{"nothing known", &TestResult{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := byFindingID(Diagnose(tc.res, Expectation{}))["nccl-version-blackwell"]
			require.Equal(t, tc.want, ok)
			if ok {
				assert.Equal(t, health.Fail, f.Severity)
				assert.Contains(t, f.Summary, "predates 2.27")
				assert.Contains(t, f.Remediation, "NCCL 2.27 or later")
			}
		})
	}
	assert.True(t, ncclver.Less("2.21.5", "2.27"))
	assert.False(t, ncclver.Less("2.27.0", "2.27"))
	assert.False(t, ncclver.Less("2.30.7+cuda13.0", "2.27"))
}

func TestDiagnoseBusBWWithoutNVLink(t *testing.T) {
	s := analyzeFile(t, "nccl_log_two_nics_both_dmabuf.txt")
	res := &TestResult{NCCL: s, Hosts: 2, Rows: []Row{{Size: 1 << 30, OutOfPlace: Measurement{BusBWGB: 19.9}}}}
	f := byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6, NoNVLink: true}))["nccl-busbw"]
	assert.Equal(t, health.Warn, f.Severity)
	assert.Contains(t, f.Summary, "as expected without NVLink")
	assert.Contains(t, f.Evidence, "2 NET/IB devices carried channels; the GPUs have no NVLink")

	// With NVLink (or not known), the usual advice.
	f = byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6}))["nccl-busbw"]
	assert.NotContains(t, f.Summary, "NVLink")
	// One NIC used: PCIe does not explain it.
	res.NCCL = analyzeFile(t, "nccl_log_two_nics_first_only_dmabuf.txt")
	f = byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6, NoNVLink: true}))["nccl-busbw"]
	assert.NotContains(t, f.Summary, "NVLink")
}

// analyzeFile analyses testdata/name, a log built from NCCL's own format
// strings (ncclog's twoNICLog).
func analyzeFile(t *testing.T, name string) *LogSummary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ncclog.Analyze(context.Background(), f)
	require.NoError(t, err)
	return s
}

// TestDiagnoseGraphFileDevNotFound: a communicator with fewer GPUs per host
// than the graph file names fails init in NCCL's loader
// (src/graph/search.cc ncclTopoGetChannelFromXml: WARN "XML Import Channel :
// dev %ld not found."); the diagnosis names the graph file, also when the
// launch failed and there is no result table.
func TestDiagnoseGraphFileDevNotFound(t *testing.T) {
	log := "gpu-a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.2\n" +
		"gpu-a:1:1 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /root/nccl-graph.xml\n" +
		"gpu-a:1:1 [0] search.cc:1 NCCL WARN XML Import Channel : dev 1 not found.\n" +
		"gpu-a:1:1 [0] NCCL INFO init.cc:1 -> 2\n"
	s, err := ncclog.Analyze(context.Background(), strings.NewReader(log))
	require.NoError(t, err)
	f, ok := byFindingID(ncclog.Diagnose(s))["nccl-graph-file"]
	require.True(t, ok, "%+v", ncclog.Diagnose(s))
	assert.Equal(t, health.Fail, f.Severity)
	assert.Contains(t, f.Summary, "XML Import Channel : dev N not found")
	assert.Contains(t, f.Evidence, "XML Import Channel : dev 1 not found.")
	assert.Contains(t, f.Evidence, "NCCL_GRAPH_FILE set to /root/nccl-graph.xml")
	assert.Contains(t, f.Remediation, "unset NCCL_GRAPH_FILE for splits")

	// The ranks exited: the launcher failure and the reason.
	run := &RunResult{Result: &TestResult{NCCL: s},
		Failures: []LaunchFailure{{Kind: ncclog.FailRankExit, Summary: "rank 0 exited with 1", Rank: 0, ExitCode: 1}}}
	fs := byFindingID(DiagnoseRun(run, Expectation{}))
	assert.Contains(t, fs, "launch-rank-exited")
	assert.Contains(t, fs, "nccl-graph-file")
}

// TestDiagnoseGIDAutoOnOldNCCL: NCCL_IB_GID_INDEX=-1 means "pick the GID"
// only from NCCL 2.21.5; an older NCCL in the log is named.
func TestDiagnoseGIDAutoOnOldNCCL(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{{"2.20.5", true}, {"2.18.3", true}, {"2.21.5", false}, {"2.27.5", false}} {
		log := "gpu-a:1:1 [0] NCCL INFO NCCL version " + tc.version + "+cuda12.2\n"
		s, err := ncclog.Analyze(context.Background(), strings.NewReader(log))
		require.NoError(t, err)
		run := &RunResult{Result: &TestResult{NCCL: s, Rows: []Row{{Size: 1 << 20}}}, Env: []Var{{Name: "NCCL_IB_GID_INDEX", Value: "-1"}}}
		f, ok := byFindingID(DiagnoseRun(run, Expectation{}))["nccl-gid-index"]
		assert.Equal(t, tc.want, ok, tc.version)
		if ok {
			assert.Contains(t, f.Summary, "NCCL_IB_GID_INDEX=-1 with NCCL "+tc.version)
			assert.Contains(t, f.Remediation, "NCCL >= 2.21.5")
		}
	}
}

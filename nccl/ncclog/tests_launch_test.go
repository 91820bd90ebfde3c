package ncclog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseTestsLauncherFailed: a log where the launcher failed was "no
// nccl-tests output found"; it is a failed run with the cause and fix.
func TestParseTestsLauncherFailed(t *testing.T) {
	for file, kind := range map[string]FailureKind{
		"F02_openmpi4_run_as_root_refusal_env_var_wording.txt":   FailRunAsRoot,
		"F05_openmpi4_not_enough_slots_available.txt":            FailSlots,
		"F06_openmpi4_orte_unable_to_reliably_start_daemons.txt": FailDaemons,
		"G03_openmpi4.1.4_ssh_could_not_resolve_daemons.txt":     FailDaemons,
		"G02_openmpi4.1.4_executable_not_found.txt":              FailExecutable,
	} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", file))
			require.NoError(t, err)
			defer f.Close()
			r, err := ParseTests(context.Background(), f)
			require.NoError(t, err)
			assert.False(t, r.OK)
			require.NotEmpty(t, r.LaunchFailures)
			assert.Equal(t, kind, r.LaunchFailures[0].Kind)
			assert.NotEmpty(t, r.LaunchFailures[0].Fix)
			assert.True(t, strings.HasPrefix(r.Reasons[0], "the launcher failed: "), r.Reasons[0])
		})
	}
	_, err := ParseTests(context.Background(), strings.NewReader("hello\nworld\n"))
	assert.ErrorIs(t, err, ErrNoTestOutput)
}

// TestSrunMPITypeMissing: srun's default --mpi=pmix on a Slurm without the
// plugin was only "launch-exit-status"/"nccl-no-results".
func TestSrunMPITypeMissing(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "H01_srun_22.05.8_debian12_mpi_pmix_cannot_load_libpmix.txt"))
	require.NoError(t, err)
	defer f.Close()
	fs, err := ClassifyLaunch(context.Background(), f)
	require.NoError(t, err)
	require.Len(t, fs, 1)
	assert.Equal(t, FailSrunMPI, fs[0].Kind)
	assert.Equal(t, "srun cannot use the MPI plugin pmix", fs[0].Summary)
	assert.Contains(t, fs[0].Fix, "--srun-mpi pmi2")
	assert.Contains(t, fs[0].Fix, "srun --mpi=list")
	assert.Len(t, fs[0].Evidence, 3) // the PMIx-library line, the context line, the Invalid MPI type line

	fs, _ = ClassifyLaunch(context.Background(), strings.NewReader("slurmstepd: error: mpi/pmix_v4: pmixp_lib_init: host1 [0]: pmixp_client_v2.c:210: can not load PMIx library\n"))
	require.Len(t, fs, 1)
	assert.Equal(t, FailSrunMPI, fs[0].Kind)
}

// TestParseTestsPureNCCLLog (library-3 item 8): a pure NCCL_DEBUG log is
// not nccl-tests output: ParseTests says ErrNoTestOutput, so the fallback
// to Analyze an importer writes fires, and Analyze reads the same file.
func TestParseTestsPureNCCLLog(t *testing.T) {
	for _, name := range []string{
		"C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt",
		"erdma-nccl_info_net_ib_using_erdma_0_roce_oob_eth0_qp_created_ebmgn9gc.txt",
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			_, err = ParseTests(t.Context(), bytes.NewReader(b))
			require.ErrorIs(t, err, ErrNoTestOutput)
			s, err := Analyze(t.Context(), bytes.NewReader(b))
			require.NoError(t, err)
			assert.Positive(t, s.NCCLLines)
			assert.NotEmpty(t, s.Transport)
		})
	}
}

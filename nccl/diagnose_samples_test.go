package nccl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiagnoseSamples runs the real parser over the recorded logs and checks
// what the diagnosis concludes.
func TestDiagnoseSamples(t *testing.T) {
	tests := []struct {
		file  string
		want  map[string]erdma.Severity
		worst erdma.Severity
	}{
		{"B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt",
			map[string]erdma.Severity{"nccl-busbw": erdma.SeverityOK}, erdma.SeverityOK},
		{"B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt",
			map[string]erdma.Severity{"nccl-wrong": erdma.SeverityFail}, erdma.SeverityFail},
		{"B08_nccl_tests_nccl1_old_format_NCCL_failure_unhandled_cuda_error.txt",
			map[string]erdma.Severity{"nccl-test-failure": erdma.SeverityFail}, erdma.SeverityFail},
		{"C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt",
			map[string]erdma.Severity{"nccl-socket-fallback": erdma.SeverityFail}, erdma.SeverityFail},
		{"C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt",
			map[string]erdma.Severity{"nccl-gdr": erdma.SeverityWarn}, erdma.SeverityFail},
		{"C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt",
			map[string]erdma.Severity{"nccl-gdr": erdma.SeverityOK}, erdma.SeverityFail},
		{"erdma-nccl_warn_ibv_create_qp_enomem_memlock_64k_erdma_pod.txt",
			map[string]erdma.Severity{"nccl-memlock": erdma.SeverityFail}, erdma.SeverityFail},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			defer f.Close()
			res, err := ncclog.ParseTests(context.Background(), f)
			require.NoError(t, err)
			fs := Diagnose(res, Expectation{BusBWGBs: 300})
			got := ids(fs)
			for id, sev := range tt.want {
				require.Contains(t, got, id, "%+v", fs)
				assert.Equal(t, sev, got[id].Severity, "%s: %+v", id, got[id])
			}
			assert.Equal(t, tt.worst, Worst(fs), "%+v", fs)
		})
	}
}

package nccl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiagnoseSamples runs the real parser over the recorded logs and checks
// what the diagnosis concludes.
func TestDiagnoseSamples(t *testing.T) {
	tests := []struct {
		file  string
		want  map[string]health.Severity
		worst health.Severity
	}{
		{"B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt",
			map[string]health.Severity{"nccl-busbw": health.OK}, health.OK},
		{"B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt",
			map[string]health.Severity{"nccl-wrong": health.Fail}, health.Fail},
		{"B08_nccl_tests_nccl1_old_format_NCCL_failure_unhandled_cuda_error.txt",
			map[string]health.Severity{"nccl-test-failure": health.Fail}, health.Fail},
		{"C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt",
			map[string]health.Severity{"nccl-socket-fallback": health.Fail}, health.Fail},
		{"C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt",
			map[string]health.Severity{"nccl-gdr": health.Warn}, health.Fail},
		{"C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt",
			map[string]health.Severity{"nccl-gdr": health.OK}, health.Fail},
		{"erdma-nccl_warn_ibv_create_qp_enomem_memlock_64k_erdma_pod.txt",
			map[string]health.Severity{"nccl-memlock": health.Fail}, health.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			res, err := ncclog.ParseTests(context.Background(), bytes.NewReader(b))
			if errors.Is(err, ncclog.ErrNoTestOutput) {
				// A pure NCCL_DEBUG log is no nccl-tests output; nccl run
				// still judges a run that printed only NCCL lines, through
				// the streaming parser.
				p := ncclog.NewTestParser()
				for _, l := range bytes.SplitAfter(b, []byte("\n")) {
					p.FeedBytes(l)
				}
				res, err = p.Result(), nil
			}
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

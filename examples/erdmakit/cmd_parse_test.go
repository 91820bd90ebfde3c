package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runParseCLI runs the CLI like run does, with stdin.
func runParseCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd(&globals{stdout: &out, stderr: &errOut})
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK, out.String(), errOut.String()
	}
	var ex *exitError
	if errors.As(err, &ex) {
		return ex.code, out.String(), errOut.String()
	}
	return ExitUnknown, out.String(), errOut.String()
}

func perftestSample(name string) string {
	return filepath.Join("..", "..", "perf", "perftest", "testdata", name)
}
func ncclSample(name string) string {
	return filepath.Join("..", "..", "nccl", "ncclog", "testdata", name)
}

func TestParsePerftestCLI(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"results", []string{"parse", "perftest", perftestSample("A20_ib_write_bw_client_rxe_default_MB_units.txt")}, ExitOK,
			[]string{"RDMA_Write BW Test", "rxe0", "0.76", "ok"}},
		{"errors only", []string{"parse", "perftest", perftestSample("A08_ib_write_bw_client_error_couldnt_connect_unable_init_socket.txt")},
			ExitFail, []string{"Couldn't connect to 192.168.125.211:18515", "fail"}},
		{"missing file", []string{"parse", "perftest", "does-not-exist.txt"}, ExitUnknown, nil},
		{"not perftest", []string{"parse", "perftest", ncclSample("C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt")}, ExitUnknown, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runParseCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, code)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
}

func TestParsePerftestJSONFromStdin(t *testing.T) {
	in := "RDMA_Write BW Test\n Device : erdma_0\n #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 5000 0.00 95.5 0.18\n"
	code, out, _ := runParseCLI(t, in, "parse", "perftest", "-", "--json")
	require.Equal(t, ExitOK, code)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	for _, k := range []string{"test", "device", "qps", "transport", "link_type", "rdma_cm", "results", "errors"} {
		assert.Contains(t, v, k)
	}
	assert.Equal(t, "erdma_0", v["device"])
	assert.Equal(t, 95.5, v["results"].([]any)[0].(map[string]any)["bw_avg_gbps"])
}

// c01SocketFallback is NCCL running over TCP sockets (NET/IB : No device
// found): the silent fallback erdmakit exists to catch.
const c01SocketFallback = "C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt"

func TestParseNCCLCLI(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"ok", []string{"parse", "nccl", ncclSample("B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")}, ExitOK,
			[]string{"16 on 2 host(s)", "338.82", "70.742", "\nok\n"}},
		{"wrong and out of bounds", []string{"parse", "nccl", ncclSample("B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt")},
			ExitFail, []string{"Test failure common.cu:1189", "out-of-bounds", "#wrong > 0"}},
		{"NCCL failure", []string{"parse", "nccl", ncclSample("B08_nccl_tests_nccl1_old_format_NCCL_failure_unhandled_cuda_error.txt")},
			ExitFail, []string{"unhandled cuda error"}},
		{"not nccl-tests", []string{"parse", "nccl", perftestSample("A20_ib_write_bw_client_rxe_default_MB_units.txt")}, ExitUnknown, nil},
		{"log GDR disabled warns", []string{"parse", "nccl-log", ncclSample("C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt")},
			ExitWarn, []string{"mlx5_0:1/RoCE mlx5_1:1/RoCE", "gdr disabled", "network", "warn    nccl-gdr", "modprobe nvidia_peermem", "\nwarn  nccl-gdr\n"}},
		{"log memlock fails", []string{"parse", "nccl-log", ncclSample("erdma-nccl-log-data-on-ack.txt")},
			ExitFail, []string{"erdma_0:1/RoCE", "ulimit -l", "ibv_create_qp", "fail    nccl-memlock", "\nfail  nccl-memlock\n"}},
		{"log socket fallback fails", []string{"parse", "nccl-log", ncclSample(c01SocketFallback)},
			ExitFail, []string{"transport          socket", "fail    nccl-socket-fallback", "NCCL fell back to TCP sockets", "\nfail  nccl-socket-fallback\n"}},
		{"log on eRDMA ok", []string{"parse", "nccl-log", ncclSample("erdma-nccl_info_net_ib_using_erdma_0_roce_oob_eth0_qp_created_ebmgn9gc.txt")},
			ExitOK, []string{"erdma_0:1/RoCE", "ok      nccl-network", "\nok\n"}},
		{"socket fallback in an nccl-tests log fails", []string{"parse", "nccl", ncclSample(c01SocketFallback)},
			ExitFail, []string{"fail    nccl-socket-fallback", "NCCL fell back to TCP sockets"}},
		// A pure NCCL_DEBUG log is not nccl-tests output (library-3 item
		// 8): parse nccl-log reads it.
		{"NCCL_DEBUG log alone is no nccl-tests output", []string{"parse", "nccl", ncclSample("C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt")},
			ExitUnknown, nil},
		{"log without NCCL lines", []string{"parse", "nccl-log", perftestSample("A20_ib_write_bw_client_rxe_default_MB_units.txt")}, ExitUnknown, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := runParseCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, code, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
}

func TestParseNCCLJSON(t *testing.T) {
	code, out, _ := runParseCLI(t, "", "parse", "nccl", ncclSample("B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt"), "--json")
	require.Equal(t, ExitOK, code)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	for _, k := range []string{"collective", "ranks", "hosts", "rows", "avg_busbw_gbs", "out_of_bounds", "ok", "failures"} {
		assert.Contains(t, v, k)
	}
	row := v["rows"].([]any)[0].(map[string]any)
	assert.Nil(t, row["in_place"].(map[string]any)["wrong"], "N/A is null")
	assert.Equal(t, 0.0, row["out_of_place"].(map[string]any)["wrong"])

	code, out, _ = runParseCLI(t, "", "parse", "nccl-log", ncclSample("C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt"), "--json")
	require.Equal(t, ExitOK, code)
	v = nil
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	for _, k := range []string{"nccl_version", "network", "ib_devices", "socket_interfaces", "gdr", "channels", "gdrdma_channels", "warnings"} {
		assert.Contains(t, v, k)
	}
	assert.Equal(t, 7.0, v["gdrdma_channels"])
}

// TestParseNCCLLauncherFailed: a launcher failure is a failed run with its
// cause and fix (exit 2), not "no nccl-tests output" (exit 3).
func TestParseNCCLLauncherFailed(t *testing.T) {
	code, out, stderr := runCLI("parse", "nccl", "../../nccl/ncclog/testdata/F05_openmpi4_not_enough_slots_available.txt")
	assert.Equal(t, ExitFail, code, stderr)
	assert.Contains(t, out, "not enough slots")
	assert.Contains(t, out, "fix: ")
}

// TestParseNCCLExitFollowsTheDiagnosis: parse judges a log as nccl run and
// report do (nccl.Diagnose, ncclog.Diagnose), with --json too: the
// socket fallback fails, GDR not used warns, a clean NET/IB log passes.
func TestParseNCCLExitFollowsTheDiagnosis(t *testing.T) {
	tests := []struct {
		name, cmd, file string
		code            int
		id              string
	}{
		{"socket fallback", "nccl-log", c01SocketFallback, ExitFail, "nccl-socket-fallback"},
		{"socket fallback, nccl-tests log", "nccl", c01SocketFallback, ExitFail, "nccl-socket-fallback"},
		{"GDR disabled", "nccl-log", "C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt", ExitWarn, "nccl-gdr"},
		{"NET/IB on eRDMA", "nccl-log", "erdma-nccl_info_net_ib_using_erdma_0_roce_oob_eth0_qp_created_ebmgn9gc.txt", ExitOK, "nccl-network"},
		{"GDRDMA on every NIC", "nccl-log", "C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt", ExitOK, "nccl-nics"},
		{"NCCL WARN line warns", "nccl-log", "C08_nccl_info_NET_IB_mixed_IB_RoCE_9nics_GDR_enabled_for_HCA_warn_busid.txt", ExitWarn, "nccl-warnings"},
		{"finished run", "nccl", "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt", ExitOK, ""},
		{"#wrong", "nccl", "B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt", ExitFail, "nccl-wrong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runParseCLI(t, "", "parse", tc.cmd, ncclSample(tc.file))
			assert.Equal(t, tc.code, code, stderr)
			if tc.id != "" {
				assert.Contains(t, out, tc.id)
			}
			code, out, stderr = runParseCLI(t, "", "parse", tc.cmd, ncclSample(tc.file), "--json")
			assert.Equal(t, tc.code, code, stderr)
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &v))
			assert.NotContains(t, v, "findings", "the JSON schema is the parser's alone")
		})
	}
}

// TestParseNCCLUnfinishedRunFails: a table without the footer is a run
// that did not finish; no finding says so, the result's ok does, and it
// still fails (exit 2) with the parser's reason.
func TestParseNCCLUnfinishedRunFails(t *testing.T) {
	in := "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n" +
		"# Collective test starting: all_reduce_perf\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n" +
		"     1048576        262144     float     sum      -1    477.3    2.20    2.20      0    492.8    2.13    2.13      0\n"
	code, out, _ := runParseCLI(t, in, "parse", "nccl", "-")
	assert.Equal(t, ExitFail, code, out)
	assert.Contains(t, out, "the run did not finish")
}

package ncclog

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNetTransportSamples(t *testing.T) {
	for file, want := range map[string]NetTransport{
		"C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt":  NetSocket,
		"C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt":                        NetRDMA,
		"C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt":                                          NetRDMA,
		"C06_nccl_info_ofi_plugin_fallback_to_internal_NET_IB_RoCE_8nics_Using_network_IB_v2.27.5.txt": NetRDMA,
		"erdma-nccl_info_net_ib_using_erdma_0_roce_oob_eth0_qp_created_ebmgn9gc.txt":                   NetRDMA,
	} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open("testdata/" + file)
			require.NoError(t, err)
			defer f.Close()
			s, err := Analyze(context.Background(), f)
			require.NoError(t, err)
			assert.Equal(t, want, s.netTransport())
		})
	}
}

func TestNetTransport(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want NetTransport
	}{
		{"using network IB", "h:1:1 [0] NCCL INFO Using network IB\n", NetRDMA},
		{"using network Socket", "h:1:1 [0] NCCL INFO Using network Socket\n", NetSocket},
		{"ranks disagree, socket first", "h:1:1 [0] NCCL INFO Using network Socket\nh:2:2 [0] NCCL INFO Using network IB\n", NetMixed},
		{"ranks disagree, IB first", "h:1:1 [0] NCCL INFO Using network IB\nh:2:2 [0] NCCL INFO Using network Socket\n", NetMixed},
		{"a plugin", "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n", NetPlugin},
		// Channel lines as net.cc prints them: "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s".
		{"channels only, IB", "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n", NetRDMA},
		{"channels only, sockets", "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n", NetSocket},
		{"channels only, both", "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\nh:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0\n", NetMixed},
		{"nothing about the network", "h:1:1 [0] NCCL INFO cudaDriverVersion 12040\n", NetUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Analyze(context.Background(), strings.NewReader(tc.log))
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.netTransport())
		})
	}
	var nilSummary *Summary
	assert.Equal(t, NetUnknown, nilSummary.netTransport())
}

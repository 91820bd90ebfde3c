package ncclog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func analyzeFile(t testing.TB, name string) *Summary {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	s, err := Analyze(context.Background(), f)
	require.NoError(t, err)
	return s
}

func chans(ib, sock, p2p, shm int) map[string]int {
	return map[string]int{"NET/IB": ib, "NET/Socket": sock, "P2P": p2p, "SHM": shm}
}

func TestAnalyzeLogSamples(t *testing.T) {
	roce := func(names ...string) []IBDevice {
		var d []IBDevice
		for i, n := range names {
			d = append(d, IBDevice{Index: i, Name: n, Port: 1, Link: "RoCE"})
		}
		return d
	}
	tests := []struct {
		file     string
		version  string
		network  string
		devices  []IBDevice
		sockets  []string
		gdr      GDR
		channels map[string]int
		gdrdma   int
		warnings []string
		check    func(t *testing.T, s *Summary)
	}{
		{file: "C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt",
			version: "2.10.3", network: "Socket", sockets: []string{"eth0"}, channels: chans(0, 1, 0, 0),
			check: func(t *testing.T, s *Summary) {
				assert.True(t, s.IBNoDevice)
				assert.Equal(t, "eth0", s.BootstrapInterface)
				assert.Equal(t, []string{"NET/Plugin : Plugin load returned 17 : libnccl-net.so: cannot open shared object file: No such file or directory."}, s.PluginErrors)
				assert.Equal(t, map[string]string{"NCCL_SHM_DISABLE": "1"}, s.Env)
			}},
		{file: "C02_nccl_info_NET_IB_RoCE_RO_OOB_GPU_Direct_RDMA_Disabled_for_HCA.txt",
			network: "IB", devices: roce("mlx5_0", "mlx5_1"), gdr: GDR{Disabled: []string{"mlx5_0", "mlx5_1"}},
			channels: chans(0, 0, 0, 0),
			check: func(t *testing.T, s *Summary) {
				assert.True(t, s.IBRelaxedOrdering)
				assert.Equal(t, "primaryip", s.OOBInterface)
				assert.Equal(t, "10.10.10.10", s.OOBAddress)
				assert.Equal(t, 16, s.NRanks)
			}},
		{file: "C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt", network: "IB", channels: chans(7, 0, 0, 0), gdrdma: 7,
			check: func(t *testing.T, s *Summary) {
				assert.Equal(t, "SYS", s.Env["NCCL_NET_GDR_LEVEL"])
			}},
		{file: "C06_nccl_info_ofi_plugin_fallback_to_internal_NET_IB_RoCE_8nics_Using_network_IB_v2.27.5.txt",
			network: "IB", devices: roce("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"),
			channels: chans(0, 0, 0, 0),
			check: func(t *testing.T, s *Summary) {
				assert.Equal(t, []string{"AWS Libfabric", "IB"}, s.Plugins)
				assert.Equal(t, []string{"plugin/net.cc:118 -> 2"}, s.PluginErrors)
				assert.Equal(t, "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11", s.Env["NCCL_IB_HCA"])
				assert.Equal(t, "enp25s0np0", s.Env["NCCL_SOCKET_IFNAME"])
				assert.Equal(t, "enp25s0np0", s.OOBInterface)
				assert.Nil(t, s.Networks)
			}},
		{file: "C08_nccl_info_NET_IB_mixed_IB_RoCE_9nics_GDR_enabled_for_HCA_warn_busid.txt",
			devices: []IBDevice{{0, "mlx5_0", 1, "IB"}, {1, "mlx5_1", 1, "RoCE"}, {2, "mlx5_2", 1, "IB"}, {3, "mlx5_3", 1, "IB"},
				{4, "mlx5_4", 1, "IB"}, {5, "mlx5_5", 1, "IB"}, {6, "mlx5_6", 1, "IB"}, {7, "mlx5_7", 1, "IB"}, {8, "mlx5_8", 1, "IB"}},
			gdr: GDR{Enabled: []string{"mlx5_0", "mlx5_1"}}, channels: chans(0, 0, 0, 0),
			warnings: []string{"Attribute busid of node nic not found"}},
		{file: "erdma-nccl-log-data-on-ack.txt", devices: roce("erdma_0"), gdr: GDR{Disabled: []string{"erdma_0"}},
			channels: chans(0, 0, 0, 0), warnings: []string{"Call to ibv_create_qp failed with error Unknown error -12"},
			check: func(t *testing.T, s *Summary) {
				assert.True(t, s.MemlockSuspect)
				assert.Equal(t, 1, s.QPCreateFailures)
				assert.Equal(t, "eth0", s.OOBInterface)
				assert.Equal(t, "10.0.5.76", s.OOBAddress)
			}},
		{file: "erdma-nccl_expected_net_ib_line_gn8is_dranet_doc.txt", devices: roce("erdma_0"), channels: chans(0, 0, 0, 0)},
		{file: "erdma-nccl_info_gdr_disabled_for_hca_erdma_0_ebmgn9gc.txt", gdr: GDR{Disabled: []string{"erdma_0"}},
			channels: chans(0, 0, 0, 0)},
		{file: "erdma-nccl_info_net_ib_using_erdma_0_roce_oob_eth0_qp_created_ebmgn9gc.txt", devices: roce("erdma_0"),
			channels: chans(0, 0, 0, 0)},
		{file: "erdma-nccl_log_fragments_erdma_benchmark_runbook.txt", network: "IB", devices: roce("erdma_0"),
			channels: chans(1, 0, 0, 0), gdrdma: 1},
		{file: "erdma-nccl_warn_ibv_create_qp_enomem_memlock_64k_erdma_pod.txt", channels: chans(0, 0, 0, 0),
			warnings: []string{"Call to ibv_create_qp failed with error Unknown error -12"},
			check:    func(t *testing.T, s *Summary) { assert.True(t, s.MemlockSuspect) }},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			s := analyzeFile(t, tc.file)
			assert.Equal(t, tc.version, s.NCCLVersion)
			assert.Equal(t, tc.network, s.Network)
			if tc.devices == nil {
				tc.devices = []IBDevice{}
			}
			assert.Equal(t, tc.devices, s.IBDevices)
			if tc.sockets == nil {
				tc.sockets = []string{}
			}
			assert.Equal(t, tc.sockets, s.SocketInterfaces)
			if tc.gdr.Enabled == nil {
				tc.gdr.Enabled = []string{}
			}
			if tc.gdr.Disabled == nil {
				tc.gdr.Disabled = []string{}
			}
			assert.Equal(t, tc.gdr, s.GDR)
			assert.Equal(t, tc.channels, s.Channels)
			assert.Equal(t, tc.gdrdma, s.GDRDMAChannels)
			if tc.warnings == nil {
				tc.warnings = []string{}
			}
			assert.Equal(t, tc.warnings, s.Warnings)
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestAnalyzeLogLines(t *testing.T) {
	tests := []struct {
		name  string
		lines string
		check func(t *testing.T, s *Summary)
	}{
		{"version with host prefix", "h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n",
			func(t *testing.T, s *Summary) { assert.Equal(t, "2.21.5", s.NCCLVersion) }},
		{"rank prefix and Ray prefix", "[0] h:1:1 [0] NCCL INFO Using network IB\n" +
			"(RayWorkerWrapper pid=123) h:1:2 [1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n" +
			"[1,0]<stdout>:h:1:3 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct\n",
			func(t *testing.T, s *Summary) {
				assert.Equal(t, "IB", s.Network)
				assert.Equal(t, chans(0, 0, 1, 1), s.Channels)
			}},
		{"plugin channels and SHARP devices", "h NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0/GDRDMA\n" +
			"h NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP ; OOB ib0:192.168.1.1<0>\n" +
			"h NCCL INFO Channel 00/1 : 1[1] -> 0[0] [send] via NET/IB/0(1)/GDRDMA/Shared\n",
			func(t *testing.T, s *Summary) {
				assert.Equal(t, 1, s.Channels["NET/AWS Libfabric"])
				assert.Equal(t, 1, s.Channels["NET/IB"])
				assert.Equal(t, 2, s.GDRDMAChannels)
				assert.Equal(t, []IBDevice{{0, "mlx5_0", 1, "IB/SHARP"}, {1, "mlx5_1", 1, "IB/SHARP"}}, s.IBDevices)
				assert.False(t, s.IBRelaxedOrdering)
				assert.Equal(t, "ib0", s.OOBInterface)
			}},
		{"ranks disagree on the network", "a NCCL INFO Using network IB\nb NCCL INFO Using network Socket\n",
			func(t *testing.T, s *Summary) {
				assert.Equal(t, "IB", s.Network)
				assert.Equal(t, []string{"IB", "Socket"}, s.Networks)
			}},
		{"ring order lines are not channels", "h NCCL INFO Channel 00/02 :    0   1   2   3\n",
			func(t *testing.T, s *Summary) { assert.Equal(t, chans(0, 0, 0, 0), s.Channels) }},
		{"several socket interfaces", "h NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:fe80::1%eth1<0>\n",
			func(t *testing.T, s *Summary) { assert.Equal(t, []string{"eth0", "eth1"}, s.SocketInterfaces) }},
		{"reg_mr ENOMEM", "h NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n",
			func(t *testing.T, s *Summary) {
				assert.True(t, s.MemlockSuspect)
				assert.Zero(t, s.QPCreateFailures)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Analyze(context.Background(), strings.NewReader(tc.lines))
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}

// The analyser's memory does not grow with the log: lists stop at their caps.
func TestAnalyzeLogBounded(t *testing.T) {
	a := NewAnalyzer()
	for i := range 10000 {
		a.Feed([]byte("h NCCL WARN distinct warning " + strings.Repeat("x", i%1000) + string(rune('a'+i%26))))
		a.Feed([]byte("h NCCL INFO NCCL_X" + string(rune('A'+i%26)) + string(rune('A'+i/26%26)) + " set by environment to 1"))
	}
	s := a.Summary()
	assert.Len(t, s.Warnings, maxWarnings)
	assert.Len(t, s.Env, maxListed)
	for _, w := range s.Warnings {
		assert.LessOrEqual(t, len(w), maxTextLen)
	}
}

func TestAnalyzeLogBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            "",
		"no NCCL lines":    "hello\nNCCL_DEBUG=INFO mpirun ...\n# NCCL Tests compiled with NCCL 1.0\n",
		"binary":           "\x00\xff\n\x01\x02",
		"nccl-tests table": "     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0    79.90   52.49   98.43      0\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Analyze(context.Background(), strings.NewReader(in))
			require.ErrorIs(t, err, ErrNoNCCLLines)
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Analyze(context.Background(), iotest.ErrReader(boom))
		require.ErrorIs(t, err, boom)
	})
	t.Run("overlong line then a real one", func(t *testing.T) {
		in := strings.Repeat("NCCL INFO ", readBuf/5) + "\nh NCCL INFO Using network IB\n"
		s, err := Analyze(context.Background(), strings.NewReader(in))
		require.NoError(t, err)
		assert.Equal(t, "IB", s.Network)
		assert.Equal(t, int64(2), s.NCCLLines)
	})
	t.Run("truncated lines", func(t *testing.T) {
		for _, in := range []string{"h NCCL INFO NET/IB : Using [0]", "h NCCL INFO NET/IB : Using [", "h NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 '",
			"h NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ", "h NCCL INFO NCCL_IB_HCA set to", "h NCCL INFO comm 0x1 rank 0 nranks "} {
			_, err := Analyze(context.Background(), strings.NewReader(in))
			require.NoError(t, err, in)
		}
	})
}

func FuzzAnalyzeLog(f *testing.F) {
	addSamples(f)
	f.Add([]byte(twoNICLog([]int{0, 1}, true)))
	f.Add([]byte(twoNICLog([]int{0}, false)))
	f.Add([]byte(trickyLines))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Analyze(context.Background(), strings.NewReader(string(in)))
		if err != nil {
			require.ErrorIs(t, err, ErrNoNCCLLines)
			return
		}
		require.NotNil(t, s.Channels)
		require.LessOrEqual(t, len(s.Warnings), maxWarnings)
		// The block scanner finds exactly what feeding line by line finds.
		a := NewAnalyzer()
		require.NoError(t, eachLineBytes(strings.NewReader(string(in)), readBuf, func(l []byte) { a.Feed(l) }))
		require.Equal(t, a.Summary(), s)
	})
}

// analyzeBoth runs the block scanner and the line-by-line path with a read
// buffer of size bytes, reading through wrap.
func analyzeBoth(t *testing.T, in []byte, size int, wrap func(io.Reader) io.Reader) (*Summary, *Summary) {
	t.Helper()
	a, err := analyzeChunks(wrap(bytes.NewReader(in)), size, 1)
	require.NoError(t, err)
	b := NewAnalyzer()
	require.NoError(t, eachLineBytes(wrap(bytes.NewReader(in)), size, func(l []byte) { b.Feed(l) }))
	return a.Summary(), b.Summary()
}

// Block boundaries, lines cut at the buffer size and readers that return a
// byte at a time must not change what is found.
func TestBlockScanAtEveryBufferSize(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(t, err)
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, b...)
	}
	all = append(all, []byte("h NCCL INFO Using network IB\r\nNET/IB : Using [0]erdma_1:1/RoCE\nno newline at the end NCCL WARN x")...)
	for _, size := range []int{1, 2, 7, 16, 61, 100, 333, 4096, readBuf} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"plain":    func(r io.Reader) io.Reader { return r },
			"one byte": iotest.OneByteReader,
			"half":     iotest.HalfReader,
		} {
			if name != "plain" && size > 4096 {
				continue
			}
			blk, lines := analyzeBoth(t, all, size, wrap)
			require.Equal(t, lines, blk, "size %d, %s reader", size, name)
		}
	}
	// With the full buffer nothing is cut: the samples' facts are all there.
	blk, _ := analyzeBoth(t, all, readBuf, func(r io.Reader) io.Reader { return r })
	assert.Equal(t, "2.10.3", blk.NCCLVersion)
	assert.Contains(t, blk.GDR.Disabled, "erdma_0")
}

// trickyLines are lines where the block scanner's shortcuts could differ
// from feeding line by line: a bare NET/ line holding NCCL's own message
// further on (the message wins), "NCCL" that is not NCCL's prefix before a
// bare NET/, "via NET/..." quoted bare, N/A and NVIDIA noise, CRLF.
const trickyLines = "[1,0]<stdout>:NET/IB : Using [0]mlx5_9:1/IB h:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_9\n" +
	"N/A NVIDIA NCCL Tests NET/Socket : Using [0]eth7:10.0.0.7<0>\r\n" +
	"quoted: Channel 00/0 : 0[0] -> 1[1] via NET/IB/3/GDRDMA\n" +
	"NET/IB : GPU Direct RDMA Enabled for HCA 0 'erdma_4' NCCL WARN late warning\r\n" +
	"NET/IB : No device found. NCCL version 2.99.1+cuda1\n" +
	"h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] [send] via CollNet7 extra words\n" +
	"h:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] [send] via NET/Plug9/0 x\n" +
	"NCCL INFO\nNCCL \nNET/\nNET/IB : Using [0]erdma_5:1/RoCE"

// The bare-line shortcut of the block scanner finds what feeding the lines
// one at a time finds, for lines that mix bare NET/ text and NCCL's messages.
func TestBlockScanMixedLines(t *testing.T) {
	for _, size := range []int{7, 61, 4096} {
		blk, lines := analyzeBoth(t, []byte(trickyLines), size, func(r io.Reader) io.Reader { return r })
		require.Equal(t, lines, blk, "size %d", size)
	}
	blk, _ := analyzeBoth(t, []byte(trickyLines), 4096, func(r io.Reader) io.Reader { return r })
	assert.Equal(t, map[string]string{"NCCL_IB_HCA": "mlx5_9"}, blk.Env)
	assert.Equal(t, []string{"late warning"}, blk.Warnings)
	assert.Equal(t, "2.99.1", blk.NCCLVersion)
	assert.Equal(t, []string{"eth7"}, blk.SocketInterfaces)
	assert.Equal(t, 1, blk.Channels["NET/IB"])
	assert.Equal(t, 1, blk.GDRDMAChannels)
	assert.Equal(t, 1, blk.Channels["CollNet7"])
	assert.Equal(t, 1, blk.Channels["NET/Plug9"])
	assert.Equal(t, []IBDevice{{Index: 0, Name: "erdma_5", Port: 1, Link: "RoCE"}}, blk.IBDevices)
	assert.Empty(t, blk.GDR.Enabled, "the line's NCCL WARN wins over its bare NET/ text")
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestAnalyzeLogReaderWithoutProgress(t *testing.T) {
	_, err := Analyze(context.Background(), zeroReader{})
	require.ErrorIs(t, err, io.ErrNoProgress)
	_, err = ParseTests(context.Background(), zeroReader{})
	require.ErrorIs(t, err, io.ErrNoProgress)
}

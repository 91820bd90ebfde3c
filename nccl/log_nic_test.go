package nccl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
)

// NCCL's format strings, copied from its sources (C's %ld/%lX as Go's
// %d/%X); a log built from them is what NCCL prints.
const (
	// src/transport/net.cc
	fmtChannelSend = "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"
	fmtChannelRecv = "Channel %02d/%d : %d[%d] -> %d[%d] [receive] via NET/%s/%d%s%s%s"
	// src/transport/net_ib.cc at v2.27.7-1 (RoCE)
	fmtQP227 = "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %d (%X/%X) fifoRkey=0x%x fifoLkey=0x%x"
	// src/transport/net_ib/connect.cc (2026, RoCE)
	fmtQPNew = "NET/IB: %s: %s %d IbDev %d Port %d qp_num %d mtu %d GID %d (%X/%X) ctsFifoRkey=0x%x ctsFifoLkey=0x%x"
	// src/graph/topo.cc
	fmtGDR = "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
	// src/init.cc
	fmtDMABUF = "DMA-BUF is available on GPU device %d"
)

// ipv4IID is the GID interface id of ::ffff:a.b.c.d as NCCL prints it (the
// GID's bytes 8..15 read as a little-endian uint64).
func ipv4IID(a, b, c, d byte) uint64 {
	return uint64(d)<<56 | uint64(c)<<48 | uint64(b)<<40 | uint64(a)<<32 | 0xffff<<16
}

// twoNICLog is an 8-GPU-per-host, two-host all_reduce log on two eRDMA
// NICs; used lists the net devs that carry channels.
func twoNICLog(used []int, dmabuf bool) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, "gpu-a:1234:1300 [0] NCCL INFO "+format+"\n", args...)
	}
	fmt.Fprintf(&b, "gpu-a:1234:1234 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n")
	line("NET/IB : Using [0]erdma_0:1/RoCE [1]erdma_1:1/RoCE [RO]; OOB eth0:172.16.0.10<0>")
	line("Using network IB")
	if dmabuf {
		for g := range 8 {
			line(fmtDMABUF, g)
		}
	}
	line(fmtGDR, "IB", "Enabled", 0, "erdma_0")
	line(fmtGDR, "IB", "Enabled", 1, "erdma_1")
	for ch := range 16 {
		dev := used[ch%len(used)]
		line(fmtChannelSend, ch, 0, 0, 0, 8, 0, "IB", dev, "/GDRDMA", "", "")
		line(fmtChannelRecv, ch, 0, 8, 0, 0, 0, "IB", dev, "/GDRDMA", "", "")
	}
	for _, dev := range used {
		line(fmtQP227, "NCCL Dev", dev, dev, 1, 100+dev, 4096, 1+dev, 0, ipv4IID(192, 168, byte(10+dev), 11), 0x1, 0x2)
		line(fmtQPNew, "ncclIbConnectImpl", "NCCL Dev", dev, dev, 1, 200+dev, 4096, 1+dev, 0, ipv4IID(192, 168, byte(10+dev), 11), 0x1, 0x2)
	}
	return b.String()
}

func TestLogPerNIC(t *testing.T) {
	s, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0, 1}, true)))
	require.NoError(t, err)
	assert.Equal(t, NetRDMA, s.Transport)
	assert.Equal(t, NICsBalanced, s.NICSpread)
	require.Len(t, s.NICs, 2)
	for i, u := range s.NICs {
		assert.Equal(t, i, u.Index)
		assert.Equal(t, fmt.Sprintf("erdma_%d", i), u.Name)
		assert.Equal(t, 16, u.Channels, "8 send + 8 receive")
		assert.Equal(t, 16, u.GDRDMAChannels)
		assert.Equal(t, []NICGID{{Index: 1 + i, Address: fmt.Sprintf("::ffff:192.168.%d.11", 10+i)}}, u.GIDs,
			"the same GID from the 2.27 and the current line format, once")
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, s.DMABUFGPUs)

	fs := byFindingID(Diagnose(&TestResult{NCCL: s}, Expectation{}))
	assert.Equal(t, erdma.SeverityOK, fs["nccl-nics"].Severity)
	assert.Contains(t, fs["nccl-nics"].Summary, "balanced")
	assert.Contains(t, fs["nccl-nics"].Evidence, "erdma_1 (NET/IB/1): 16 channel connections, 16 GDRDMA, GID 2 ::ffff:192.168.11.11")
	assert.Equal(t, erdma.SeverityOK, fs["nccl-gdr"].Severity)
	assert.Contains(t, fs["nccl-gdr"].Summary, "through DMA-BUF")
	assert.Contains(t, fs["nccl-gdr"].Evidence, "DMA-BUF is available on GPU device 0")
}

func TestLogFirstNICOnly(t *testing.T) {
	s, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0}, false)))
	require.NoError(t, err)
	assert.Equal(t, NICsFirstOnly, s.NICSpread)
	require.Len(t, s.NICs, 1)
	assert.Empty(t, s.DMABUFGPUs)

	fs := byFindingID(Diagnose(&TestResult{NCCL: s}, Expectation{}))
	f := fs["nccl-nics"]
	assert.Equal(t, erdma.SeverityWarn, f.Severity)
	assert.Equal(t, "only 1 of 2 NET/IB devices carried traffic: the others sat idle", f.Summary)
	assert.Contains(t, f.Evidence, "erdma_1 (NET/IB/1): no channel")
	assert.Contains(t, f.Remediation, "--graph-file")
	assert.NotContains(t, fs["nccl-gdr"].Summary, "DMA-BUF")

	// With the graph file passed, the advice is about why it did not take.
	s.Env = map[string]string{"NCCL_GRAPH_FILE": "/root/nccl-graph.xml"}
	f = byFindingID(Diagnose(&TestResult{NCCL: s}, Expectation{}))["nccl-nics"]
	assert.Contains(t, f.Summary, "although NCCL_GRAPH_FILE was set")
	assert.Contains(t, f.Remediation, "ranks as the graph has GPUs")
}

func TestLogUnbalancedNICs(t *testing.T) {
	s, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0, 0, 0, 1}, false)))
	require.NoError(t, err)
	assert.Equal(t, NICsUnbalanced, s.NICSpread)
	f := byFindingID(Diagnose(&TestResult{NCCL: s}, Expectation{}))["nccl-nics"]
	assert.Equal(t, erdma.SeverityOK, f.Severity)
	assert.Contains(t, f.Summary, "unevenly")
}

func TestLogOneNIC(t *testing.T) {
	log := "h:1:1 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE; OOB eth0:10.0.0.1<0>\n" +
		"h:1:1 [0] NCCL INFO Using network IB\n" +
		"h:1:1 [0] NCCL INFO " + fmt.Sprintf(fmtChannelSend, 0, 0, 0, 0, 1, 0, "IB", 0, "", "", "") + "\n"
	s, err := AnalyzeLog(strings.NewReader(log))
	require.NoError(t, err)
	assert.Equal(t, NICsOne, s.NICSpread)
	_, ok := byFindingID(Diagnose(&TestResult{NCCL: s}, Expectation{}))["nccl-nics"]
	assert.False(t, ok, "one NIC: nothing to spread")
}

func TestLogNICBounds(t *testing.T) {
	var b strings.Builder
	for dev := range 200 {
		fmt.Fprintf(&b, "h:1:1 [0] NCCL INFO "+fmtChannelSend+"\n", 0, 0, 0, 0, 1, 0, "IB", dev, "", "", "")
		for g := range 20 {
			fmt.Fprintf(&b, "h:1:1 [0] NCCL INFO "+fmtQP227+"\n", "NCCL Dev", dev, dev, 1, 1, 4096, g, 0, uint64(g), 1, 2)
		}
	}
	s, err := AnalyzeLog(strings.NewReader(b.String()))
	require.NoError(t, err)
	assert.Len(t, s.NICs, maxNICs)
	for _, u := range s.NICs {
		assert.LessOrEqual(t, len(u.GIDs), maxNICGIDs)
	}
}

func TestLogNICMerge(t *testing.T) {
	a, b := NewLogAnalyzer(), NewLogAnalyzer()
	lines := strings.Split(strings.TrimSpace(twoNICLog([]int{0, 1}, true)), "\n")
	for i, l := range lines {
		if i < len(lines)/2 {
			a.Feed([]byte(l))
		} else {
			b.Feed([]byte(l))
		}
	}
	whole := NewLogAnalyzer()
	for _, l := range lines {
		whole.Feed([]byte(l))
	}
	a.nic.merge(&b.nic)
	assert.Equal(t, whole.nic, a.nic)
}

func byFindingID(fs []erdma.Finding) map[string]erdma.Finding {
	out := map[string]erdma.Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

// TestDiagnoseRunKnowsWhatWasPassed: a run that passed NCCL_GRAPH_FILE is
// diagnosed with it even when the log does not print the environment.
func TestDiagnoseRunKnowsWhatWasPassed(t *testing.T) {
	s, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0}, false)))
	require.NoError(t, err)
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
	rtx := []TestRank{{Rank: 0, Host: "gpu-a", Device: 0, GPU: "NVIDIA RTX PRO 5000 Blackwell"}}
	h100 := []TestRank{{Rank: 0, Host: "gpu-a", Device: 0, GPU: "NVIDIA H100 80GB HBM3"}}
	// include/checks.h: WARN("Cuda failure '%s'", cudaGetErrorString(err)).
	cudaFail := "gpu-a:1:1 [0] NCCL INFO NCCL version %s+cuda12.2\ngpu-a:1:1 [0] init.cc:1 NCCL WARN Cuda failure 'invalid argument'\n"
	logOf := func(version string) *LogSummary {
		s, err := AnalyzeLog(strings.NewReader(fmt.Sprintf(cudaFail, version)))
		require.NoError(t, err)
		return s
	}
	quiet, err := AnalyzeLog(strings.NewReader("gpu-a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.2\n"))
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
				assert.Equal(t, erdma.SeverityFail, f.Severity)
				assert.Contains(t, f.Summary, "predates 2.27")
				assert.Contains(t, f.Remediation, "NCCL 2.27 or later")
			}
		})
	}
	assert.True(t, versionLess("2.21.5", "2.27"))
	assert.False(t, versionLess("2.27.0", "2.27"))
	assert.False(t, versionLess("2.30.7+cuda13.0", "2.27"))
}

func TestDiagnoseBusBWWithoutNVLink(t *testing.T) {
	s, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0, 1}, true)))
	require.NoError(t, err)
	res := &TestResult{NCCL: s, Hosts: 2, Rows: []Row{{Size: 1 << 30, OutOfPlace: Measurement{BusBWGB: 19.9}}}}
	f := byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6, NoNVLink: true}))["nccl-busbw"]
	assert.Equal(t, erdma.SeverityWarn, f.Severity)
	assert.Contains(t, f.Summary, "as expected without NVLink")
	assert.Contains(t, f.Evidence, "2 NET/IB devices carried channels; the GPUs have no NVLink")

	// With NVLink (or not known), the usual advice.
	f = byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6}))["nccl-busbw"]
	assert.NotContains(t, f.Summary, "NVLink")
	// One NIC used: PCIe does not explain it.
	one, err := AnalyzeLog(strings.NewReader(twoNICLog([]int{0}, true)))
	require.NoError(t, err)
	res.NCCL = one
	f = byFindingID(Diagnose(res, Expectation{BusBWGBs: 26.6, NoNVLink: true}))["nccl-busbw"]
	assert.NotContains(t, f.Summary, "NVLink")
}

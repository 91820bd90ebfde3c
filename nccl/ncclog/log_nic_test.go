package ncclog

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	s, err := Analyze(context.Background(), strings.NewReader(twoNICLog([]int{0, 1}, true)))
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

	fs := byFindingID(Diagnose(s))
	assert.Equal(t, health.OK, fs["nccl-nics"].Severity)
	assert.Contains(t, fs["nccl-nics"].Summary, "balanced")
	assert.Contains(t, fs["nccl-nics"].Evidence, "erdma_1 (NET/IB/1): 16 channel connections, 16 GDRDMA, GID 2 ::ffff:192.168.11.11")
	assert.Equal(t, health.OK, fs["nccl-gdr"].Severity)
	assert.Contains(t, fs["nccl-gdr"].Evidence, "DMA-BUF is available on GPU device 0")
	// NCCL prints "DMA-BUF is available" from the GPU's CUDA attribute
	// alone (src/init.cc dmaBufSupported): the log alone does not tell the
	// path, nor does it with a peer-memory module loaded (eRDMA's provider
	// registers no dma-buf: GDR runs through nvidia_peermem there).
	for _, peer := range []string{"", "nvidia_peermem"} {
		s.HostPeerMem = peer
		f := byFindingID(Diagnose(s))["nccl-gdr"]
		assert.Contains(t, f.Summary, "GPUDirect RDMA in use (the log does not tell whether through DMA-BUF or peer memory)", peer)
		assert.Contains(t, f.Evidence[len(f.Evidence)-1], "the log does not tell which path GDR took", peer)
	}
	// No peer-memory module and GPU Direct RDMA Enabled: DMA-BUF.
	s.HostPeerMem = "none"
	f := byFindingID(Diagnose(s))["nccl-gdr"]
	assert.Contains(t, f.Summary, "GPUDirect RDMA in use through DMA-BUF (")
	assert.Contains(t, f.Evidence, "no peer-memory module on the host, GPU Direct RDMA Enabled for HCA erdma_0, erdma_1: NCCL registered through DMA-BUF")
}

func TestLogFirstNICOnly(t *testing.T) {
	s, err := Analyze(context.Background(), strings.NewReader(twoNICLog([]int{0}, false)))
	require.NoError(t, err)
	assert.Equal(t, NICsFirstOnly, s.NICSpread)
	require.Len(t, s.NICs, 1)
	assert.Empty(t, s.DMABUFGPUs)

	fs := byFindingID(Diagnose(s))
	f := fs["nccl-nics"]
	assert.Equal(t, health.Warn, f.Severity)
	assert.Equal(t, "only 1 of 2 NET/IB devices carried traffic: the others sat idle", f.Summary)
	assert.Contains(t, f.Evidence, "erdma_1 (NET/IB/1): no channel")
	assert.Contains(t, f.Remediation, "--graph-file")
	assert.NotContains(t, fs["nccl-gdr"].Summary, "DMA-BUF")

	// With the graph file passed, the advice is about why it did not take.
	s.Env = map[string]string{"NCCL_GRAPH_FILE": "/root/nccl-graph.xml"}
	f = byFindingID(Diagnose(s))["nccl-nics"]
	assert.Contains(t, f.Summary, "although NCCL_GRAPH_FILE was set")
	assert.Contains(t, f.Remediation, "ranks as the graph has GPUs")
}

func TestLogUnbalancedNICs(t *testing.T) {
	s, err := Analyze(context.Background(), strings.NewReader(twoNICLog([]int{0, 0, 0, 1}, false)))
	require.NoError(t, err)
	assert.Equal(t, NICsUnbalanced, s.NICSpread)
	f := byFindingID(Diagnose(s))["nccl-nics"]
	assert.Equal(t, health.OK, f.Severity)
	assert.Contains(t, f.Summary, "unevenly")
}

func TestLogOneNIC(t *testing.T) {
	log := "h:1:1 [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE; OOB eth0:10.0.0.1<0>\n" +
		"h:1:1 [0] NCCL INFO Using network IB\n" +
		"h:1:1 [0] NCCL INFO " + fmt.Sprintf(fmtChannelSend, 0, 0, 0, 0, 1, 0, "IB", 0, "", "", "") + "\n"
	s, err := Analyze(context.Background(), strings.NewReader(log))
	require.NoError(t, err)
	assert.Equal(t, NICsOne, s.NICSpread)
	_, ok := byFindingID(Diagnose(s))["nccl-nics"]
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
	s, err := Analyze(context.Background(), strings.NewReader(b.String()))
	require.NoError(t, err)
	assert.Len(t, s.NICs, maxNICs)
	for _, u := range s.NICs {
		assert.LessOrEqual(t, len(u.GIDs), maxNICGIDs)
	}
}

func TestLogNICMerge(t *testing.T) {
	a, b := NewAnalyzer(), NewAnalyzer()
	lines := strings.Split(strings.TrimSpace(twoNICLog([]int{0, 1}, true)), "\n")
	for i, l := range lines {
		if i < len(lines)/2 {
			a.Feed([]byte(l))
		} else {
			b.Feed([]byte(l))
		}
	}
	whole := NewAnalyzer()
	for _, l := range lines {
		whole.Feed([]byte(l))
	}
	a.nic.merge(&b.nic)
	assert.Equal(t, whole.nic, a.nic)
}

func byFindingID(fs []health.Finding) map[string]health.Finding {
	out := map[string]health.Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

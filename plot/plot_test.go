package plot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
)

func TestBusBW(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt"))
	require.NoError(t, err)
	defer f.Close()
	res, err := ncclog.ParseTests(context.Background(), f)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, BusBW(&b, res, "all_reduce_perf, 2 x 8 H100", 300))
	svg := b.String()
	assert.True(t, strings.HasPrefix(svg, "<?xml") || strings.Contains(svg[:200], "<svg"), svg[:100])
	for _, s := range []string{"bus bandwidth (GB/s)", "out-of-place", "in-place", "expected 300.0 GB/s", ">2G<", ">8<"} {
		assert.True(t, strings.Contains(svg, s), "svg lacks %q", s)
	}

	b.Reset()
	one := &ncclog.TestResult{Rows: []ncclog.Row{{Size: 4 << 20, OutOfPlace: ncclog.Measurement{BusBWGB: 10}}}}
	require.NoError(t, BusBW(&b, one, "one size", 0))
	assert.Contains(t, b.String(), ">4M<")

	assert.ErrorIs(t, BusBW(&b, &ncclog.TestResult{}, "", 0), ErrNoData)
	assert.ErrorIs(t, BusBW(&b, nil, "", 0), ErrNoData)
	assert.ErrorIs(t, BusBW(&b, &ncclog.TestResult{Rows: []ncclog.Row{{Size: 0}}}, "", 0), ErrNoData)
}

func TestSweep(t *testing.T) {
	var results []perf.Result
	for _, dev := range []string{"erdma_0", "erdma_1"} {
		for _, s := range []int{4096, 65536, 1 << 20} {
			results = append(results, perf.Result{Device: dev, Size: s, AvgGbps: float64(s) / 10000})
		}
	}
	var b strings.Builder
	require.NoError(t, Sweep(&b, "sweep", results))
	svg := b.String()
	for _, want := range []string{"<svg", "sweep", "erdma_0", "erdma_1", "total", ">4K<", ">64K<", ">1M<", "Gbit/s"} {
		assert.Contains(t, svg, want)
	}
	assert.ErrorIs(t, Sweep(&b, "empty", nil), ErrNoData)

	b.Reset()
	require.NoError(t, Sweep(&b, "one size", results[:1]))
	assert.Contains(t, b.String(), ">4K<")
}

func TestHeatmap(t *testing.T) {
	rep := mesh(12)
	var b strings.Builder
	require.NoError(t, Heatmap(&b, rep))
	assert.Contains(t, b.String(), "<svg")
	assert.Contains(t, b.String(), "gpu004")
	assert.Contains(t, b.String(), "median 100.0")

	assert.ErrorIs(t, Heatmap(&b, &fleet.MeshReport{Hosts: []string{"a"}}), ErrNoData)
	assert.ErrorIs(t, Heatmap(&b, nil), ErrNoData)
	// A matrix that does not match the hosts is an error, not a panic.
	bad := mesh(3)
	bad.Matrix[1] = bad.Matrix[1][:1]
	assert.ErrorIs(t, Heatmap(&b, bad), ErrNoData)
	assert.ErrorIs(t, Heatmap(&b, &fleet.MeshReport{Hosts: []string{"a", "b"}}), ErrNoData)
}

// mesh is an n-host mesh at 100 Gbit/s with host 4 slow and host 9 dead.
func mesh(n int) *fleet.MeshReport {
	rep := &fleet.MeshReport{MedianGbps: 100}
	for i := range n {
		rep.Hosts = append(rep.Hosts, "gpu"+pad3(i))
		row := make([]*float64, n)
		for j := range n {
			if i == j || i == 9 || j == 9 {
				continue
			}
			v := 100.0
			if i == 4 || j == 4 {
				v = 30
			}
			row[j] = &v
		}
		rep.Matrix = append(rep.Matrix, row)
	}
	return rep
}

func pad3(i int) string {
	s := "00" + string(rune('0'+i/10)) + string(rune('0'+i%10))
	return s[len(s)-3:]
}

func TestLog2Ticks(t *testing.T) {
	ticks := log2Ticks(8, 8<<30)
	assert.Equal(t, "8", ticks[0].Label)
	assert.Equal(t, "8M", ticks[20].Label)
	assert.Len(t, ticks, 31)
	assert.Nil(t, log2Ticks(0, 1))
}

func TestLatencyHistogram(t *testing.T) {
	res := func(dev string, size int, base time.Duration) perf.LatencyResult {
		var s []time.Duration
		for i := range 1000 {
			s = append(s, base+time.Duration(i%37)*100*time.Nanosecond)
		}
		s = append(s, 100*base) // an outlier: counted in the last bin
		return perf.LatencyResult{Device: dev, Size: size, LatencyStats: perf.NewLatencyStats(s), Samples: s}
	}
	var b strings.Builder
	require.NoError(t, LatencyHistogram(&b, "lat", []perf.LatencyResult{res("erdma_0", 2, 15*time.Microsecond), res("erdma_0", 4096, 18*time.Microsecond)}))
	svg := b.String()
	for _, want := range []string{"<svg", "lat", "erdma_0 2B: median", "erdma_0 4KiB: median", "one-way latency"} {
		assert.Contains(t, svg, want)
	}
	assert.ErrorIs(t, LatencyHistogram(&b, "empty", []perf.LatencyResult{{Device: "x"}}), ErrNoData)
	b.Reset()
	one := perf.LatencyResult{Device: "x", Size: 2, Samples: []time.Duration{time.Microsecond}, LatencyStats: perf.NewLatencyStats([]time.Duration{time.Microsecond})}
	require.NoError(t, LatencyHistogram(&b, "one sample", []perf.LatencyResult{one}))
}

func TestHeatmapOfManyHostsIsOneImage(t *testing.T) {
	var small, big strings.Builder
	require.NoError(t, Heatmap(&small, mesh(rasterAbove)))
	require.NoError(t, Heatmap(&big, mesh(256)))
	assert.False(t, strings.Contains(small.String(), "<image"), "32 hosts: SVG cells")
	assert.True(t, strings.Contains(big.String(), "<image") && strings.Contains(big.String(), "data:image/"), "256 hosts: one embedded image")
	assert.Less(t, big.Len(), 300<<10, "256 hosts' heat map")
}

func TestNCCLUse(t *testing.T) {
	s := &ncclog.Summary{Transport: ncclog.NetRDMA, Channels: map[string]int{"NET/IB": 16, "P2P": 8},
		NICs: []ncclog.NICUse{{Index: 0, Name: "erdma_0", Channels: 8, GDRDMAChannels: 8}, {Index: 1, Channels: 8}}}
	var b strings.Builder
	require.NoError(t, NCCLUse(&b, "nccl", s))
	for _, want := range []string{"<svg", "NET/IB", "P2P", "erdma_0", "NIC 1", "GDRDMA", "network: rdma"} {
		assert.Contains(t, b.String(), want)
	}
	assert.ErrorIs(t, NCCLUse(&b, "", &ncclog.Summary{}), ErrNoData)
	assert.ErrorIs(t, NCCLUse(&b, "", nil), ErrNoData)
}

func TestLatencyPercentiles(t *testing.T) {
	r := perf.LatencyResult{Device: "erdma_0", Size: 2, LatencyStats: perf.LatencyStats{Iterations: 10, MinUS: 1, MedianUS: 2, P99US: 3, P999US: 4, MaxUS: 9}}
	var b strings.Builder
	require.NoError(t, LatencyPercentiles(&b, "lat", []perf.LatencyResult{r}))
	for _, want := range []string{"<svg", "erdma_0 2B", "p99.9", "median"} {
		assert.Contains(t, b.String(), want)
	}
	assert.ErrorIs(t, LatencyPercentiles(&b, "", []perf.LatencyResult{{Device: "x"}}), ErrNoData)
}

// cornerGlyphs pads the heat map as gonum's box per cell does: the same
// drawing, byte for byte.
func TestCornerGlyphsDrawTheSame(t *testing.T) {
	for _, n := range []int{2, 12, 40} {
		rep := mesh(n)
		draw := func(wrap bool) string {
			p := gplot.New()
			h := plotter.NewHeatMap(matrixGrid(rep.Matrix), moreland.SmoothBlueRed().Palette(8))
			if wrap {
				p.Add(cornerGlyphs{h})
			} else {
				p.Add(h)
			}
			var b strings.Builder
			require.NoError(t, writeSVG(&b, p, 4, 4))
			return b.String()
		}
		assert.True(t, draw(false) == draw(true), "%d hosts: the drawings differ", n)
	}
}

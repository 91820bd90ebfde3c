package nccl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlotBusBW(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt"))
	require.NoError(t, err)
	defer f.Close()
	res, err := ParseTests(f)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, PlotBusBW(&b, res, "all_reduce_perf, 2 x 8 H100", 300))
	svg := b.String()
	assert.True(t, strings.HasPrefix(svg, "<?xml") || strings.Contains(svg[:200], "<svg"), svg[:100])
	for _, s := range []string{"bus bandwidth (GB/s)", "out-of-place", "in-place", "expected 300.0 GB/s", ">2G<", ">8<"} {
		assert.True(t, strings.Contains(svg, s), "svg lacks %q", s)
	}

	b.Reset()
	one := &TestResult{Rows: []Row{row(4<<20, 10, 0)}}
	require.NoError(t, PlotBusBW(&b, one, "one size", 0))
	assert.Contains(t, b.String(), ">4M<")

	assert.ErrorIs(t, PlotBusBW(&b, &TestResult{}, "", 0), ErrNothingToPlot)
	assert.ErrorIs(t, PlotBusBW(&b, nil, "", 0), ErrNothingToPlot)
	assert.ErrorIs(t, PlotBusBW(&b, &TestResult{Rows: []Row{{Size: 0}}}, "", 0), ErrNothingToPlot)
}

func TestLog2Ticks(t *testing.T) {
	ticks := log2Ticks(8, 8<<30)
	assert.Equal(t, "8", ticks[0].Label)
	assert.Equal(t, "8M", ticks[20].Label)
	assert.Len(t, ticks, 31)
	assert.Nil(t, log2Ticks(0, 1))
	assert.Equal(t, "1K", sizeLabel(1024))
	assert.Equal(t, "1000", sizeLabel(1000))
}

package plot

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	var results []Bandwidth
	for _, dev := range []string{"erdma_0", "erdma_1"} {
		for _, s := range []int{4096, 65536, 1 << 20} {
			results = append(results, Bandwidth{Device: dev, Size: s, Gbps: float64(s) / 10000})
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

	assert.ErrorIs(t, Heatmap(&b, Mesh{Hosts: []string{"a"}}), ErrNoData)
	assert.ErrorIs(t, Heatmap(&b, Mesh{}), ErrNoData)
	// A matrix that does not match the hosts is an error, not a panic.
	bad := mesh(3)
	bad.Matrix[1] = bad.Matrix[1][:1]
	assert.ErrorIs(t, Heatmap(&b, bad), ErrNoData)
	assert.ErrorIs(t, Heatmap(&b, Mesh{Hosts: []string{"a", "b"}}), ErrNoData)
}

// mesh is an n-host mesh at 100 Gbit/s with host 4 slow and host 9 dead.
func mesh(n int) Mesh {
	rep := Mesh{MedianGbps: 100}
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
	assert.Equal(t, "8", ticks[0].label)
	assert.Equal(t, "8M", ticks[20].label)
	assert.Len(t, ticks, 31)
	assert.Nil(t, log2Ticks(0, 1))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func TestLatencyHistogram(t *testing.T) {
	res := func(dev string, size int, base time.Duration) Latency {
		var s []time.Duration
		for i := range 1000 {
			s = append(s, base+time.Duration(i%37)*100*time.Nanosecond)
		}
		s = append(s, 100*base) // an outlier: counted in the last bin
		return Latency{Device: dev, Size: size, Iterations: len(s), MinUS: us(base), MedianUS: us(base) + 1.8, P99US: us(base) + 3.5, P999US: us(base) + 3.6, MaxUS: us(100 * base), Samples: s}
	}
	var b strings.Builder
	require.NoError(t, LatencyHistogram(&b, "lat", []Latency{res("erdma_0", 2, 15*time.Microsecond), res("erdma_0", 4096, 18*time.Microsecond)}))
	svg := b.String()
	for _, want := range []string{"<svg", "lat", "erdma_0 2B: median", "erdma_0 4KiB: median", "one-way latency"} {
		assert.Contains(t, svg, want)
	}
	assert.ErrorIs(t, LatencyHistogram(&b, "empty", []Latency{{Device: "x"}}), ErrNoData)
	b.Reset()
	one := Latency{Device: "x", Size: 2, Iterations: 1, MinUS: 1, MedianUS: 1, P99US: 1, P999US: 1, MaxUS: 1, Samples: []time.Duration{time.Microsecond}}
	require.NoError(t, LatencyHistogram(&b, "one sample", []Latency{one}))
}

func TestHeatmapOfManyHostsIsOneImage(t *testing.T) {
	var small, big strings.Builder
	require.NoError(t, Heatmap(&small, mesh(rasterAbove)))
	require.NoError(t, Heatmap(&big, mesh(256)))
	assert.False(t, strings.Contains(small.String(), "<image"), "32 hosts: SVG cells")
	assert.True(t, strings.Contains(big.String(), "<image") && strings.Contains(big.String(), "data:image/"), "256 hosts: one embedded image")
	assert.Less(t, big.Len(), 300<<10, "256 hosts' heat map")
	// A pixel a cell, in the cells' colours.
	_, data, ok := strings.Cut(big.String(), "data:image/png;base64,")
	require.True(t, ok)
	data, _, _ = strings.Cut(data, `"`)
	raw, err := base64.StdEncoding.DecodeString(data)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 256, 256), img.Bounds())
	for _, c := range []struct {
		x, y int
		want string
	}{{0, 4, "#a50026"}, {4, 200, "#a50026"}, {0, 9, "#c8c8c8"}, {7, 7, "#ffffff"}, {0, 1, "#4575b4"}} {
		r, g, b, _ := img.At(c.x, c.y).RGBA()
		assert.Equal(t, c.want, fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8), "pixel %d,%d", c.x, c.y)
	}
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
	r := Latency{Device: "erdma_0", Size: 2, Iterations: 10, MinUS: 1, MedianUS: 2, P99US: 3, P999US: 4, MaxUS: 9}
	var b strings.Builder
	require.NoError(t, LatencyPercentiles(&b, "lat", []Latency{r}))
	for _, want := range []string{"<svg", "erdma_0 2B", "p99.9", "median"} {
		assert.Contains(t, b.String(), want)
	}
	assert.ErrorIs(t, LatencyPercentiles(&b, "", []Latency{{Device: "x"}}), ErrNoData)
}

// wellFormed checks that svg is one well-formed XML document whose root is
// an <svg> of positive size, and returns its character data.
func wellFormed(t *testing.T, svg string) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var text strings.Builder
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "%.300s", svg)
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				require.Equal(t, "svg", e.Name.Local)
				for _, a := range e.Attr {
					if a.Name.Local == "width" || a.Name.Local == "height" {
						v, err := strconv.ParseFloat(a.Value, 64)
						require.NoError(t, err)
						assert.Positive(t, v, a.Name.Local)
					}
				}
			}
			for _, a := range e.Attr {
				assert.NotContains(t, a.Value, "NaN", "<%s %s>", e.Name.Local, a.Name.Local)
				assert.NotContains(t, a.Value, "Inf", "<%s %s>", e.Name.Local, a.Name.Local)
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			text.Write(e)
		}
	}
	assert.Equal(t, 1, roots)
	return text.String()
}

// Every chart is one well-formed document; names from the input are text,
// never markup, and values that cannot be drawn are left out.
func TestChartsAreWellFormedAndEscaped(t *testing.T) {
	evil := `<script>alert(1)</script>&"'` + "\x00\x1b"
	nan, inf := math.NaN(), math.Inf(1)
	res := &ncclog.TestResult{Rows: []ncclog.Row{{Size: 8, OutOfPlace: ncclog.Measurement{BusBWGB: nan}, InPlace: ncclog.Measurement{BusBWGB: 1}},
		{Size: 1024, OutOfPlace: ncclog.Measurement{BusBWGB: inf}, InPlace: ncclog.Measurement{BusBWGB: 2}}}}
	m := mesh(3)
	m.Hosts[1] = evil
	m.Matrix[0][1] = &nan
	lat := []Latency{{Device: evil, Size: 2, Iterations: 2, MinUS: 1, MedianUS: nan, P99US: inf, P999US: 3, MaxUS: 4, Samples: []time.Duration{time.Microsecond, 3 * time.Microsecond}}}
	charts := map[string]func(w io.Writer) error{
		"busbw": func(w io.Writer) error { return BusBW(w, res, evil, inf) },
		"sweep": func(w io.Writer) error {
			return Sweep(w, evil, []Bandwidth{{Device: evil, Size: 8, Gbps: nan}, {Device: evil, Size: 16, Gbps: 5}, {Device: "b", Size: 16, Gbps: inf}})
		},
		"heatmap":     func(w io.Writer) error { return Heatmap(w, m) },
		"histogram":   func(w io.Writer) error { return LatencyHistogram(w, evil, lat) },
		"percentiles": func(w io.Writer) error { return LatencyPercentiles(w, evil, lat) },
		"nccl": func(w io.Writer) error {
			return NCCLUse(w, evil, &ncclog.Summary{Channels: map[string]int{evil: 2}, NICs: []ncclog.NICUse{{Name: evil, Channels: 1}}})
		},
	}
	for name, draw := range charts {
		var b strings.Builder
		require.NoError(t, draw(&b), name)
		assert.NotContains(t, b.String(), "<script", name)
		text := wellFormed(t, b.String())
		assert.Contains(t, text, "<script>alert(1)</script>&", name)
	}
}

func TestLinearAxisTicksAreNice(t *testing.T) {
	labels := func(a axis) (out []string) {
		for _, t := range a.ticks {
			out = append(out, t.label)
		}
		return out
	}
	a := linearAxis("", 0, 187, true)
	assert.Equal(t, []string{"0", "50", "100", "150", "200"}, labels(a))
	assert.Equal(t, 200.0, a.max)
	assert.Equal(t, []string{"15", "15.5", "16", "16.5", "17"}, labels(linearAxis("", 14.9, 17.2, false))[:5])
	assert.Equal(t, []string{"0", "0.001", "0.002"}, labels(linearAxis("", 0, 0.0041, true))[:3])
	// Degenerate and hostile ranges: a few ticks, never a hang.
	for _, r := range [][2]float64{{5, 5}, {1e16, 1e16 + 2}, {math.NaN(), 1}, {-math.MaxFloat64, math.MaxFloat64}, {0, math.Inf(1)}, {3, -3}} {
		a := linearAxis("", r[0], r[1], true)
		assert.NotEmpty(t, a.ticks, "%v", r)
		assert.LessOrEqual(t, len(a.ticks), 50, "%v", r)
		assert.Greater(t, a.max, a.min, "%v", r)
	}
}

// FuzzSweep: any device name, size and bandwidth make a well-formed chart
// or ErrNoData.
func FuzzSweep(f *testing.F) {
	f.Add("erdma_0", 65536, 97.5, "erdma_1", 1<<20, 180.0)
	f.Add("<a>&", 0, math.NaN(), "", -1, math.Inf(-1))
	f.Fuzz(func(t *testing.T, d1 string, s1 int, g1 float64, d2 string, s2 int, g2 float64) {
		var b strings.Builder
		err := Sweep(&b, d1+d2, []Bandwidth{{Device: d1, Size: s1, Gbps: g1}, {Device: d2, Size: s2, Gbps: g2}})
		if errors.Is(err, ErrNoData) {
			return
		}
		require.NoError(t, err)
		wellFormed(t, b.String())
	})
}

// The heat map says who is slow: host 4's cells (30% of the median) are
// the red end, dead host 9's grey, the diagonal white, every other pair the
// one blue of pairs as expected.
func TestHeatmapColoursTheCulprits(t *testing.T) {
	var b strings.Builder
	require.NoError(t, Heatmap(&b, mesh(12)))
	cells := map[string]int{}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "<rect") && strings.Contains(l, `stroke="#ffffff"`) {
			_, fill, _ := strings.Cut(l, `fill="`)
			cells[fill[:7]]++
		}
	}
	assert.Equal(t, map[string]int{"#a50026": 20, "#c8c8c8": 22, "#ffffff": 12, "#4575b4": 90}, cells)
}

// heatCells counts the heat map's cells by class and fill.
func heatCells(svg string) map[string]int {
	cells := map[string]int{}
	for _, l := range strings.Split(svg, "\n") {
		if _, rest, ok := strings.Cut(l, `class="cell `); ok {
			class, _, _ := strings.Cut(rest, `"`)
			_, fill, _ := strings.Cut(l, `fill="`)
			cells[class+" "+fill[:7]]++
		}
	}
	return cells
}

// A healthy mesh is one colour (report-2 item 4): pairs that differ by a
// hair, or by less than the band, look alike; the scale is the expectation
// (else the median), not the matrix's own minimum and maximum.
func TestHeatmapOfAHealthyMeshIsOneColour(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	m := func(expect float64, vals ...float64) Mesh {
		n := 4
		mm := Mesh{Hosts: []string{"a", "b", "c", "d"}, MedianGbps: 40, ExpectGbps: expect}
		k := 0
		mm.Matrix = make([][]*float64, n)
		for i := range n {
			mm.Matrix[i] = make([]*float64, n)
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				mm.Matrix[i][j], mm.Matrix[j][i] = v(vals[k%len(vals)]), v(vals[k%len(vals)])
				k++
			}
		}
		return mm
	}
	for _, tt := range []struct {
		name string
		mesh Mesh
		want map[string]int
	}{
		{"one pair at 39.99 of 40", m(0, 40, 40, 40, 40, 40, 39.99), map[string]int{"alike #4575b4": 12, "self #ffffff": 4}},
		{"within 10% of the expected", m(40, 37, 40, 41, 39, 38, 36.5), map[string]int{"alike #4575b4": 12, "self #ffffff": 4}},
		{"above the expected", m(40, 55, 40, 41, 39, 38, 60), map[string]int{"alike #4575b4": 12, "self #ffffff": 4}},
		{"one pair at half the expected", m(40, 40, 40, 40, 40, 40, 20), map[string]int{"alike #4575b4": 10, "slow #e14430": 2, "self #ffffff": 4}},
		{"nothing measured above 0", func() Mesh { x := m(0, 0); x.MedianGbps = 0; return x }(), map[string]int{"slow #a50026": 12, "self #ffffff": 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, Heatmap(&b, tt.mesh))
			assert.Equal(t, tt.want, heatCells(b.String()))
			assert.Contains(t, b.String(), "as expected")
			assert.Contains(t, b.String(), "slower")
		})
	}
}

package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"github.com/erdmakit/erdmakit/fleet"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
)

// matrixGrid adapts a mesh matrix to plotter.GridXYZ; untested or failed
// cells are NaN (drawn in the NaN colour).
type matrixGrid [][]*float64

func (m matrixGrid) Dims() (c, r int)   { return len(m), len(m) }
func (m matrixGrid) X(c int) float64    { return float64(c) }
func (m matrixGrid) Y(r int) float64    { return float64(r) }
func (m matrixGrid) Z(c, r int) float64 { return fleet.Round(m[r][c]) }

// hostTicks labels at most about 32 hosts along an axis.
type hostTicks []string

func (h hostTicks) Ticks(min, max float64) []gplot.Tick {
	step := 1 + len(h)/32
	var t []gplot.Tick
	for i := range h {
		label := ""
		if i%step == 0 {
			label = h[i]
		}
		t = append(t, gplot.Tick{Value: float64(i), Label: label})
	}
	return t
}

// cornerGlyphs is a heat map whose glyph boxes are its four corner cells':
// the plot pads its axes for the extreme boxes only, so the drawing is the
// same as with gonum's box per cell (65536 for 256 hosts, most of a big
// map's drawing time).
type cornerGlyphs struct{ *plotter.HeatMap }

func (h cornerGlyphs) GlyphBoxes(p *gplot.Plot) []gplot.GlyphBox {
	c, r := h.GridXYZ.Dims()
	out := make([]gplot.GlyphBox, 0, 4)
	for _, i := range []int{0, c - 1} {
		for _, j := range []int{0, r - 1} {
			b := gplot.GlyphBox{X: p.X.Norm(h.GridXYZ.X(i)), Y: p.Y.Norm(h.GridXYZ.Y(j))}
			b.Rectangle.Min.X, b.Rectangle.Min.Y, b.Rectangle.Max.X, b.Rectangle.Max.Y = -5, -5, 5, 5
			out = append(out, b)
		}
	}
	return out
}

// rasterAbove is the host count past which Heatmap draws its cells as an
// image.
const rasterAbove = 32

// Heatmap writes a bw mesh's Gbit/s matrix as an SVG heat map: a bad host
// is a pale cross, a bad link a pale pair of cells, a dead host grey. A
// mesh of fewer than two hosts (or a matrix not n x n) is ErrNoData.
func Heatmap(w io.Writer, rep *fleet.MeshReport) error {
	if rep == nil || len(rep.Hosts) < 2 {
		return fmt.Errorf("%w: a heat map needs at least 2 hosts", ErrNoData)
	}
	n := len(rep.Hosts)
	if len(rep.Matrix) != n {
		return fmt.Errorf("%w: matrix has %d rows for %d hosts", ErrNoData, len(rep.Matrix), n)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, row := range rep.Matrix {
		if len(row) != n {
			return fmt.Errorf("%w: matrix row %d has %d cells for %d hosts", ErrNoData, i, len(row), n)
		}
		for _, v := range row {
			if v != nil {
				lo, hi = math.Min(lo, *v), math.Max(hi, *v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if hi-lo < 1e-9 {
		hi = lo + 1
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(lo)
	pal.SetMax(hi)
	p := gplot.New()
	p.Title.Text = fmt.Sprintf("bw mesh, Gbit/s: red %.1f .. blue %.1f, median %.1f", lo, hi, rep.MedianGbps)
	// Slow pairs in red: the palette runs from high (blue) to low (red).
	h := plotter.NewHeatMap(matrixGrid(rep.Matrix), palette.Reverse(pal).Palette(64))
	h.NaN = color.Gray{Y: 200}
	// Past rasterAbove hosts the cells are one embedded PNG, not n*n SVG
	// paths: 256 hosts' 65536 cells would be megabytes of SVG.
	h.Rasterized = n > rasterAbove
	p.Add(cornerGlyphs{h})
	p.X.Tick.Marker = hostTicks(rep.Hosts)
	p.Y.Tick.Marker = hostTicks(rep.Hosts)
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = -1
	p.X.Label.Text = "host"
	p.Y.Label.Text = "host"
	size := 6 + float64(n)/16
	return writeSVG(w, p, size, size)
}

package plot

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Mesh is a pairwise bandwidth mesh (fleet.MeshReport's figures; package
// report converts it): Matrix[i][j] is the Gbit/s between Hosts[i] and
// Hosts[j], nil where the pair was not measured or failed.
type Mesh struct {
	Hosts      []string
	Matrix     [][]*float64
	MedianGbps float64
}

// rasterAbove is the host count past which Heatmap draws its cells as an
// image.
const rasterAbove = 32

// unmeasured is the colour of a cell without a figure.
func unmeasured() color.RGBA { return color.RGBA{200, 200, 200, 255} }

// heat is the colour of t in [0, 1] on Moreland's smooth blue-red
// diverging map (blue 0, red 1; perceptually even, and readable with the
// common colour-vision deficiencies), interpolated between 17 even steps.
func heat(t float64) color.RGBA {
	coolWarm := [17][3]uint8{
		{58, 76, 192}, {77, 104, 216}, {98, 130, 234}, {119, 154, 247}, {141, 176, 254}, {163, 194, 255},
		{184, 208, 249}, {204, 217, 238}, {221, 221, 221}, {236, 211, 198}, {245, 197, 173}, {248, 177, 148},
		{245, 154, 123}, {236, 127, 99}, {222, 96, 76}, {203, 61, 56}, {180, 4, 38},
	}
	t = math.Min(1, math.Max(0, t)) * float64(len(coolWarm)-1)
	i := min(int(t), len(coolWarm)-2)
	f := t - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(float64(coolWarm[i][k])*(1-f) + float64(coolWarm[i+1][k])*f))
	}
	return color.RGBA{c[0], c[1], c[2], 255}
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// Heatmap writes a bw mesh's Gbit/s matrix as an SVG heat map, host 0 at
// the top left: slow pairs red, fast ones blue, so a bad host is a red
// cross, a bad link a red pair of cells, a dead host grey. A mesh of fewer
// than two hosts (or a matrix not n x n) is ErrNoData.
func Heatmap(w io.Writer, m Mesh) error {
	n := len(m.Hosts)
	if n < 2 {
		return fmt.Errorf("%w: a heat map needs at least 2 hosts", ErrNoData)
	}
	if len(m.Matrix) != n {
		return fmt.Errorf("%w: matrix has %d rows for %d hosts", ErrNoData, len(m.Matrix), n)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, row := range m.Matrix {
		if len(row) != n {
			return fmt.Errorf("%w: matrix row %d has %d cells for %d hosts", ErrNoData, i, len(row), n)
		}
		for _, v := range row {
			if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
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
	cell := func(i, j int) color.RGBA {
		if v := m.Matrix[i][j]; v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			return heat((hi - *v) / (hi - lo)) // high blue, low red
		}
		return unmeasured()
	}
	// At most about 32 host names along an axis; the last host first on y.
	x := nominalAxis("host", m.Hosts, 1+n/32)
	y := nominalAxis("host", m.Hosts, 1+n/32)
	y.min, y.max = y.max, y.min
	l := layout{title: fmt.Sprintf("bw mesh, Gbit/s: red %.1f .. blue %.1f, median %.1f", lo, hi, m.MedianGbps), xVertical: true, extra: 90}
	side := 400 + 6*float64(n)
	left, top, right, bottom := margins(x, y, l)
	ch := newChart(left+side+right, top+side+bottom, x, y, l)
	x0, y0 := ch.px(-0.5), ch.py(-0.5)
	size := (ch.right - ch.left) / float64(n)
	if n > rasterAbove {
		// One embedded PNG, a pixel a cell, not n*n rects: 256 hosts'
		// 65536 cells would be megabytes of SVG.
		img := image.NewRGBA(image.Rect(0, 0, n, n))
		for i := range n {
			for j := range n {
				img.SetRGBA(j, i, cell(i, j))
			}
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			return fmt.Errorf("plot: heat map image: %w", err)
		}
		fmt.Fprintf(&ch.b, `<image x="%s" y="%s" width="%s" height="%s" preserveAspectRatio="none" style="image-rendering:pixelated" href="data:image/png;base64,%s"/>`+"\n",
			num(x0), num(y0), num(ch.right-ch.left), num(ch.bottom-ch.top), base64.StdEncoding.EncodeToString(b.Bytes()))
	} else {
		for i := range n {
			for j := range n {
				ch.rect(x0+float64(j)*size, y0+float64(i)*size, size, size, fmt.Sprintf(`fill="%s" stroke="#ffffff" stroke-width="0.5"`, hex(cell(i, j))))
			}
		}
	}
	// The colour scale: fast at the top, slow at the bottom, unmeasured.
	const steps, barW = 32, 16.0
	sx, sh := ch.right+24, (ch.bottom-ch.top)*0.6
	for k := range steps {
		ch.rect(sx, ch.top+sh*float64(k)/steps, barW, sh/steps+0.5, fmt.Sprintf(`fill="%s"`, hex(heat(float64(k)/(steps-1)))))
	}
	ch.text(sx+barW+4, ch.top+fontSize*0.8, fmt.Sprintf("%.1f", hi), "start", fontSize, 0, "")
	ch.text(sx+barW+4, ch.top+sh, fmt.Sprintf("%.1f", lo), "start", fontSize, 0, "")
	ch.rect(sx, ch.top+sh+12, barW, barW, fmt.Sprintf(`fill="%s"`, hex(unmeasured())))
	ch.text(sx+barW+4, ch.top+sh+12+barW-3, "none", "start", fontSize, 0, "")
	return ch.write(w)
}

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
	"sort"
)

// Mesh is a pairwise bandwidth mesh (fleet.MeshReport's figures; package
// report converts it): Matrix[i][j] is the Gbit/s between Hosts[i] and
// Hosts[j], nil where the pair was not measured or failed (and on the
// diagonal: a host is no pair with itself).
type Mesh struct {
	Hosts      []string
	Matrix     [][]*float64
	MedianGbps float64
	// ExpectGbps is what a pair should reach: when set, the colours are
	// judged against it, else against MedianGbps.
	ExpectGbps float64
	// Alike is the fraction of that reference at and above which a pair is
	// as expected, drawn in the one colour of a healthy mesh (default 0.9
	// of ExpectGbps, 0.8 of the median: bw mesh's own outlier thresholds).
	Alike float64
	// Tested[i][j] says whether the pair was tested at all: a pair not
	// tested (a screen, not the full mesh) is drawn as such, not as a
	// failure. Nil means every pair was tested.
	Tested [][]bool
}

// rasterAbove is the host count past which Heatmap draws its cells as an
// image.
const rasterAbove = 32

// The heat map's colours: one for every pair as expected, a ramp from pale
// yellow to dark red for slower ones (ColorBrewer's RdYlBu, readable with
// the common colour-vision deficiencies), grey for a pair without a
// figure, white for a host with itself.
var (
	alikeColour    = color.RGBA{69, 117, 180, 255}
	noneColour     = color.RGBA{200, 200, 200, 255}
	untestedColour = color.RGBA{238, 238, 238, 255}
	selfColour     = color.RGBA{255, 255, 255, 255}
	slowRamp       = [5][3]uint8{{254, 224, 144}, {253, 174, 97}, {244, 109, 67}, {215, 48, 39}, {165, 0, 38}}
)

// slowest is the fraction of the reference at and below which a pair is
// the ramp's darkest red.
const slowest = 0.3

// slow is the colour of t in [0, 1] on the slow ramp (0: just below the
// band, 1: the slowest).
func slow(t float64) color.RGBA {
	t = math.Min(1, math.Max(0, t)) * float64(len(slowRamp)-1)
	i := min(int(t), len(slowRamp)-2)
	f := t - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(float64(slowRamp[i][k])*(1-f) + float64(slowRamp[i+1][k])*f))
	}
	return color.RGBA{c[0], c[1], c[2], 255}
}

// scale is how Heatmap colours a figure: against ref, alike at and above
// band Gbit/s.
type scale struct {
	ref, band, floor float64
	against          string // "the expected", "the median"
}

func (m Mesh) scale(measured []float64) scale {
	sc := scale{ref: m.ExpectGbps, against: "expected"}
	alike := m.Alike
	if sc.ref <= 0 || math.IsNaN(sc.ref) || math.IsInf(sc.ref, 0) {
		sc.ref, sc.against = m.MedianGbps, "median"
		if alike <= 0 {
			alike = 0.8
		}
		if sc.ref <= 0 || math.IsNaN(sc.ref) || math.IsInf(sc.ref, 0) {
			sc.ref = median(measured)
		}
	}
	if alike <= 0 || alike >= 1 {
		alike = 0.9
	}
	sc.band, sc.floor = alike*sc.ref, slowest*sc.ref
	return sc
}

func (sc scale) colour(v *float64) (color.RGBA, bool) {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return noneColour, false
	}
	if sc.ref <= 0 {
		return slow(1), false // nothing above 0 Gbit/s to compare with: no pair is fine
	}
	if *v >= sc.band {
		return alikeColour, true
	}
	return slow((sc.band - *v) / (sc.band - sc.floor)), false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// tested is whether the pair i, j was tested: always without Tested.
func (m Mesh) tested(i, j int) bool {
	return m.Tested == nil || (i < len(m.Tested) && j < len(m.Tested[i]) && m.Tested[i][j])
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// Heatmap writes a bw mesh's Gbit/s matrix as an SVG heat map, host 0 at
// the top left, coloured against the expectation (or the median): every
// pair at or above Alike of it is one blue, so a healthy mesh is one
// colour whatever its small spread; slower pairs run from yellow to red
// (red at 30% of the reference and below), so a bad host is a red cross
// and a bad link a red pair of cells; a failed pair is grey, one not
// tested (Tested) a paler grey.
// The legend says so in words. A mesh of fewer than two hosts (or a matrix
// not n x n) is ErrNoData.
func Heatmap(w io.Writer, m Mesh) error {
	n := len(m.Hosts)
	if n < 2 {
		return fmt.Errorf("%w: a heat map needs at least 2 hosts", ErrNoData)
	}
	if len(m.Matrix) != n {
		return fmt.Errorf("%w: matrix has %d rows for %d hosts", ErrNoData, len(m.Matrix), n)
	}
	var measured []float64
	for i, row := range m.Matrix {
		if len(row) != n {
			return fmt.Errorf("%w: matrix row %d has %d cells for %d hosts", ErrNoData, i, len(row), n)
		}
		for j, v := range row {
			if i != j && v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
				measured = append(measured, *v)
			}
		}
	}
	sc := m.scale(measured)
	cell := func(i, j int) (color.RGBA, string) {
		if i == j {
			return selfColour, "self"
		}
		if !m.tested(i, j) {
			return untestedColour, "untested"
		}
		c, ok := sc.colour(m.Matrix[i][j])
		switch {
		case ok:
			return c, "alike"
		case c == noneColour:
			return c, "none"
		}
		return c, "slow"
	}
	// At most about 32 host names along an axis; the last host first on y.
	x := nominalAxis("host", m.Hosts, 1+n/32)
	y := nominalAxis("host", m.Hosts, 1+n/32)
	y.min, y.max = y.max, y.min
	title := fmt.Sprintf("bw mesh, Gbit/s: median %.1f", m.MedianGbps)
	if sc.against == "expected" {
		title += fmt.Sprintf(", expected %.1f", sc.ref)
	}
	l := layout{title: title, xVertical: true, extra: 190}
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
				c, _ := cell(i, j)
				img.SetRGBA(j, i, c)
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
				c, class := cell(i, j)
				ch.rect(x0+float64(j)*size, y0+float64(i)*size, size, size, fmt.Sprintf(`class="cell %s" fill="%s" stroke="#ffffff" stroke-width="0.5"`, class, hex(c)))
			}
		}
	}
	// The legend, in words: what one colour means, the ramp of slower
	// pairs, no figure.
	const sw, lineH = 16.0, fontSize + 9
	sx := ch.right + 18
	ty := ch.top + fontSize
	ch.text(sx, ty, fmt.Sprintf("against the %s %.1f:", sc.against, sc.ref), "start", fontSize, 0, "")
	ty += lineH * 0.6
	ch.rect(sx, ty, sw, sw, fmt.Sprintf(`fill="%s"`, hex(alikeColour)))
	ch.text(sx+sw+6, ty+sw-3, fmt.Sprintf("≥ %.1f as expected", sc.band), "start", fontSize, 0, "")
	ty += lineH + 4
	const steps, rampH = 16, 110.0
	for k := range steps {
		ch.rect(sx, ty+rampH*float64(k)/steps, sw, rampH/steps+0.5, fmt.Sprintf(`fill="%s"`, hex(slow(float64(k)/(steps-1)))))
	}
	ch.text(sx+sw+6, ty+fontSize*0.8, fmt.Sprintf("< %.1f slower", sc.band), "start", fontSize, 0, "")
	ch.text(sx+sw+6, ty+rampH, fmt.Sprintf("≤ %.1f", sc.floor), "start", fontSize, 0, "")
	ty += rampH + 12
	ch.rect(sx, ty, sw, sw, fmt.Sprintf(`fill="%s"`, hex(noneColour)))
	ch.text(sx+sw+6, ty+sw-3, "no figure (failed)", "start", fontSize, 0, "")
	ty += lineH
	if m.Tested != nil {
		ch.rect(sx, ty, sw, sw, fmt.Sprintf(`fill="%s"`, hex(untestedColour)))
		ch.text(sx+sw+6, ty+sw-3, "not tested (screen)", "start", fontSize, 0, "")
		ty += lineH
	}
	ch.rect(sx, ty, sw, sw, `fill="#ffffff" stroke="#bbbbbb"`)
	ch.text(sx+sw+6, ty+sw-3, "the host itself", "start", fontSize, 0, "")
	return ch.write(w)
}

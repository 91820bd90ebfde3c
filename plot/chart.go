package plot

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/units"
)

// tick is a mark on an axis; one without a label is a minor tick (no grid
// line).
type tick struct {
	v     float64
	label string
}

// axis maps data values onto a side of the frame.
type axis struct {
	label    string
	min, max float64 // max < min runs the axis backwards
	log      bool    // log2 scale
	ticks    []tick
	// pad (px) keeps markers at the ends inside the frame.
	pad float64
}

// norm is v's place along the axis, 0 at min and 1 at max.
func (a *axis) norm(v float64) float64 {
	if a.log {
		return (math.Log2(v) - math.Log2(a.min)) / (math.Log2(a.max) - math.Log2(a.min))
	}
	return (v - a.min) / (a.max - a.min)
}

// niceStep is the 1, 2 or 5 times a power of ten at or above raw.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / e; {
	case f <= 1:
		return e
	case f <= 2:
		return 2 * e
	case f <= 5:
		return 5 * e
	}
	return 10 * e
}

// finite is whether v can be drawn.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// highest is the largest finite value of vs, or 0.
func highest(vs ...float64) float64 {
	top := 0.0
	for _, v := range vs {
		if finite(v) {
			top = math.Max(top, v)
		}
	}
	return top
}

// linearAxis spans [lo, hi] with about five labelled ticks at nice
// numbers; widen extends the ends to the ticks around them.
func linearAxis(label string, lo, hi float64, widen bool) axis {
	if !finite(lo) || !finite(hi) || !finite(hi-lo) {
		lo, hi = 0, 1
	}
	if hi-lo <= math.Abs(lo)*1e-9 { // also where hi > lo is lost in rounding
		hi = lo + math.Max(1, math.Abs(lo)*1e-3)
	}
	step := niceStep((hi - lo) / 5)
	if widen {
		lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	}
	decimals := min(max(0, int(-math.Floor(math.Log10(step)+1e-9))), 12)
	a := axis{label: label, min: lo, max: hi}
	first := math.Ceil(lo/step-1e-9) * step
	for i := range min(int((hi-first)/step+1e-9)+1, 50) {
		v := first + float64(i)*step
		// The step's decimals, then no trailing zeros: "0", "0.5", "1".
		label := strconv.FormatFloat(v, 'f', decimals, 64)
		if strings.Contains(label, ".") {
			label = strings.TrimRight(strings.TrimRight(label, "0"), ".")
		}
		if label == "-0" {
			label = "0"
		}
		a.ticks = append(a.ticks, tick{v: v, label: label})
	}
	return a
}

// log2Ticks marks the powers of two in [min, max], labelling every other
// one or fewer when the range is wide ("8", "1K", "4M", "1G"): message-size
// axes are read in powers of two.
func log2Ticks(min, max float64) []tick {
	if min <= 0 || max <= min {
		return nil
	}
	lo, hi := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
	step := 1
	for (hi-lo)/step > 12 {
		step *= 2
	}
	var ticks []tick
	for e := lo; e <= hi; e++ {
		v := math.Exp2(float64(e))
		if v < min || v > max {
			continue
		}
		t := tick{v: v}
		if (e-lo)%step == 0 {
			t.label = units.Format(int64(v), units.Label)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// sizeAxis is a log2 message-size axis spanning [lo, hi] (widened around a
// single size, which a log axis cannot show).
func sizeAxis(lo, hi float64) axis {
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	return axis{label: "message size (bytes)", min: lo, max: hi, log: true, ticks: log2Ticks(lo, hi), pad: pad}
}

// nominalAxis puts names at 0, 1, ... with room for half a step at each
// end; every step-th name is labelled.
func nominalAxis(label string, names []string, step int) axis {
	a := axis{label: label, min: -0.5, max: float64(len(names)) - 0.5}
	for i, n := range names {
		t := tick{v: float64(i)}
		if i%step == 0 {
			t.label = n
		}
		a.ticks = append(a.ticks, t)
	}
	return a
}

// chart is a frame with axes, grid, title and legend on a canvas; the data
// is drawn between the frame and the legend.
type chart struct {
	*canvas
	x, y                     axis
	left, top, right, bottom float64 // the frame, px
}

// layout holds what decides a chart's margins besides its axes.
type layout struct {
	title     string
	xVertical bool    // x tick labels turned upright (host names)
	extra     float64 // px right of the frame for a colour scale
}

// margins are the px around the frame that the title, the tick labels and
// the axis labels take.
func margins(x, y axis, l layout) (left, top, right, bottom float64) {
	widest := func(a axis) float64 {
		w := 0.0
		for _, t := range a.ticks {
			w = math.Max(w, textWidth(t.label, fontSize))
		}
		return w
	}
	top = 12
	if l.title != "" {
		top += titleSize + 12
	}
	left = 10 + fontSize + 10 + widest(y) + 10
	bottom = 6 + fontSize + 10 + fontSize + 10
	if l.xVertical {
		bottom = 6 + widest(x) + 10 + fontSize + 10
	}
	return left, top, 20 + l.extra, bottom
}

// newChart draws the frame of a w x h chart: title, grid, axes, ticks and
// their labels.
func newChart(w, h float64, x, y axis, l layout) *chart {
	ch := &chart{canvas: newCanvas(w, h), x: x, y: y}
	left, top, right, bottom := margins(x, y, l)
	ch.left, ch.top, ch.right, ch.bottom = left, top, ch.w-right, ch.h-bottom
	if l.title != "" {
		ch.text((ch.left+ch.right)/2, 12+titleSize, l.title, "middle", titleSize, 0, "")
	}
	const grid, axisColour, tickLen = `stroke="#e3e3e3"`, `stroke="#444444"`, 5.0
	for _, t := range x.ticks {
		if px := ch.px(t.v); t.label != "" {
			ch.line(px, ch.top, px, ch.bottom, grid)
		}
	}
	for _, t := range y.ticks {
		if py := ch.py(t.v); t.label != "" {
			ch.line(ch.left, py, ch.right, py, grid)
		}
	}
	ch.line(ch.left, ch.bottom, ch.right, ch.bottom, axisColour)
	ch.line(ch.left, ch.top, ch.left, ch.bottom, axisColour)
	for _, t := range x.ticks {
		px, n := ch.px(t.v), tickLen
		if t.label == "" {
			n = tickLen / 2
		}
		ch.line(px, ch.bottom, px, ch.bottom+n, axisColour)
		switch {
		case t.label == "":
		case l.xVertical:
			ch.text(px+fontSize/3, ch.bottom+tickLen+4, t.label, "end", fontSize, -90, "")
		default:
			ch.text(px, ch.bottom+tickLen+4+fontSize, t.label, "middle", fontSize, 0, "")
		}
	}
	for _, t := range y.ticks {
		py, n := ch.py(t.v), tickLen
		if t.label == "" {
			n = tickLen / 2
		}
		ch.line(ch.left-n, py, ch.left, py, axisColour)
		if t.label != "" {
			ch.text(ch.left-tickLen-4, py+fontSize/3, t.label, "end", fontSize, 0, "")
		}
	}
	ch.text((ch.left+ch.right)/2, ch.h-10, x.label, "middle", fontSize, 0, "")
	ch.text(10+fontSize, (ch.top+ch.bottom)/2, y.label, "middle", fontSize, -90, "")
	return ch
}

// px is x's horizontal place in px.
func (ch *chart) px(x float64) float64 {
	return ch.left + ch.x.pad + ch.x.norm(x)*(ch.right-ch.left-2*ch.x.pad)
}

// py is y's vertical place in px.
func (ch *chart) py(y float64) float64 {
	return ch.bottom - ch.y.pad - ch.y.norm(y)*(ch.bottom-ch.top-2*ch.y.pad)
}

// series draws a line through the points, with markers when points is
// set; a point that cannot be drawn (NaN, infinite) is left out.
func (ch *chart) series(xs, ys []float64, colour string, points, dashed bool) {
	px, py := make([]float64, 0, len(xs)), make([]float64, 0, len(ys))
	for i := range xs {
		if x, y := ch.px(xs[i]), ch.py(ys[i]); finite(x) && finite(y) {
			px, py = append(px, x), append(py, y)
		}
	}
	ch.polyline(px, py, colour, 2, dashed)
	if points {
		ch.markers(px, py, colour)
	}
}

// entry is one line of a legend: a line sample (with a marker, dashed) or
// a filled box.
type entry struct {
	name, colour          string
	points, dashed, solid bool
}

// corner places a legend inside the frame.
type corner int

const (
	topLeft corner = iota
	topRight
	bottomRight
)

// legend draws the entries in a box at the corner of the frame.
func (ch *chart) legend(at corner, entries ...entry) {
	if len(entries) == 0 {
		return
	}
	const inset, sample, lineH = 10.0, 26.0, fontSize + 7
	w := 0.0
	for _, e := range entries {
		w = math.Max(w, textWidth(e.name, fontSize))
	}
	w += 8 + sample + 6 + 8
	h := float64(len(entries))*lineH + 8
	x, y := ch.left+inset, ch.top+inset
	switch at {
	case topRight:
		x = ch.right - inset - w
	case bottomRight:
		x, y = ch.right-inset-w, ch.bottom-inset-h
	}
	ch.rect(x, y, w, h, `fill="#ffffff" fill-opacity="0.9" stroke="#bbbbbb"`)
	for i, e := range entries {
		cy := y + 4 + lineH*(float64(i)+0.5)
		sx := x + 8
		switch {
		case e.solid:
			ch.rect(sx+sample/2-6, cy-6, 12, 12, fmt.Sprintf(`fill="%s"`, e.colour))
		default:
			ch.polyline([]float64{sx, sx + sample}, []float64{cy, cy}, e.colour, 2, e.dashed)
			if e.points {
				ch.markers([]float64{sx + sample/2}, []float64{cy}, e.colour)
			}
		}
		ch.text(sx+sample+6, cy+fontSize/3, e.name, "start", fontSize, 0, "")
	}
}

// write ends the chart and writes it to w.
func (ch *chart) write(w io.Writer) error {
	_, err := ch.WriteTo(w)
	return err
}

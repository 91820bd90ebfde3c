package plot

import (
	"errors"
	"fmt"
	"io"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/erdmakit/erdmakit/internal/units"
)

// ErrNoData is returned when the input has nothing a chart could show (no
// rows, no results, fewer than two hosts).
var ErrNoData = errors.New("plot: nothing to plot")

// writeSVG renders p at the given size in inches.
func writeSVG(w io.Writer, p *gplot.Plot, width, height float64) error {
	wt, err := p.WriterTo(vg.Length(width)*vg.Inch, vg.Length(height)*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("plot: rendering: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("plot: writing: %w", err)
	}
	return nil
}

// log2Ticks marks the powers of two in [min, max], labelling every other
// one or fewer when the range is wide ("8", "1K", "4M", "1G"): message-size
// axes are read in powers of two.
func log2Ticks(min, max float64) []gplot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	lo, hi := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
	step := 1
	for (hi-lo)/step > 12 {
		step *= 2
	}
	var ticks []gplot.Tick
	for e := lo; e <= hi; e++ {
		v := math.Exp2(float64(e))
		if v < min || v > max {
			continue
		}
		t := gplot.Tick{Value: v}
		if (e-lo)%step == 0 {
			t.Label = units.Format(int64(v), units.Label)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// sizeAxis makes p's x axis a log2 message-size axis spanning [lo, hi]
// (widened around a single size, which a log axis cannot show).
func sizeAxis(p *gplot.Plot, lo, hi float64) (float64, float64) {
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	p.X.Label.Text = "message size (bytes)"
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = gplot.TickerFunc(log2Ticks)
	p.X.Min, p.X.Max = lo, hi
	return lo, hi
}

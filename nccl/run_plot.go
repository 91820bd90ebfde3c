package nccl

import (
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// ErrNothingToPlot is returned by PlotBusBW when the result has no row with
// a positive size.
var ErrNothingToPlot = errors.New("no result rows to plot")

// PlotBusBW writes an SVG chart of bus bandwidth against message size (log2
// x axis), out-of-place and in-place, with a dashed line at expectGBs when
// it is positive.
func PlotBusBW(w io.Writer, res *TestResult, title string, expectGBs float64) error {
	var out, in plotter.XYs
	if res != nil {
		for _, r := range res.Rows {
			if r.Size <= 0 {
				continue
			}
			out = append(out, plotter.XY{X: float64(r.Size), Y: r.OutOfPlace.BusBWGB})
			in = append(in, plotter.XY{X: float64(r.Size), Y: r.InPlace.BusBWGB})
		}
	}
	if len(out) == 0 {
		return ErrNothingToPlot
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "bus bandwidth (GB/s)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(log2Ticks)
	p.Y.Min = 0
	lo, hi := out[0].X, out[0].X
	for _, xy := range out {
		lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
	}
	if lo == hi { // one size: give the log axis a width
		lo, hi = lo/2, hi*2
	}
	p.X.Min, p.X.Max = lo, hi
	p.Add(plotter.NewGrid())
	for i, s := range []struct {
		name string
		xys  plotter.XYs
	}{{"out-of-place", out}, {"in-place", in}} {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", s.name, err)
		}
		l.Color = plotutil.Color(i)
		pts.Color = plotutil.Color(i)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	if expectGBs > 0 {
		e, err := plotter.NewLine(plotter.XYs{{X: lo, Y: expectGBs}, {X: hi, Y: expectGBs}})
		if err != nil {
			return fmt.Errorf("plotting the expectation: %w", err)
		}
		e.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		e.Color = plotutil.Color(2)
		p.Add(e)
		p.Legend.Add(fmt.Sprintf("expected %.1f GB/s", expectGBs), e)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	wt, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("rendering the plot: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// log2Ticks marks powers of two, labelling every other one when the range
// is wide ("8", "1K", "4M", "1G").
func log2Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	lo, hi := int(math.Floor(math.Log2(min))), int(math.Ceil(math.Log2(max)))
	step := 1
	for (hi-lo)/step > 12 {
		step *= 2
	}
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		v := math.Exp2(float64(e))
		if v < min || v > max {
			continue
		}
		t := plot.Tick{Value: v}
		if (e-lo)%step == 0 {
			t.Label = sizeLabel(int64(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func sizeLabel(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprint(n)
}

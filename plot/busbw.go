package plot

import (
	"fmt"
	"io"
	"math"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// BusBW writes an SVG chart of an nccl-tests result: bus bandwidth against
// message size, out-of-place and in-place, with a dashed line at expectGBs
// when it is positive. A result without a row of positive size is ErrNoData.
func BusBW(w io.Writer, res *ncclog.TestResult, title string, expectGBs float64) error {
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
		return ErrNoData
	}
	p := gplot.New()
	p.Title.Text = title
	p.Y.Label.Text = "bus bandwidth (GB/s)"
	p.Y.Min = 0
	lo, hi := out[0].X, out[0].X
	for _, xy := range out {
		lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
	}
	lo, hi = sizeAxis(p, lo, hi)
	p.Add(plotter.NewGrid())
	for i, s := range []struct {
		name string
		xys  plotter.XYs
	}{{"out-of-place", out}, {"in-place", in}} {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return fmt.Errorf("plot: %s: %w", s.name, err)
		}
		l.Color = plotutil.Color(i)
		pts.Color = plotutil.Color(i)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	if expectGBs > 0 {
		e, err := plotter.NewLine(plotter.XYs{{X: lo, Y: expectGBs}, {X: hi, Y: expectGBs}})
		if err != nil {
			return fmt.Errorf("plot: the expectation: %w", err)
		}
		e.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		e.Color = plotutil.Color(2)
		p.Add(e)
		p.Legend.Add(fmt.Sprintf("expected %.1f GB/s", expectGBs), e)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return writeSVG(w, p, 8, 4.5)
}

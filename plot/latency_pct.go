package plot

import (
	"fmt"
	"io"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/perf"
)

// LatencyPercentiles writes an SVG chart of `bw lat` results without their
// samples (as read back from --json): one line per device and size through
// min, median, p99, p99.9 and max, in µs. Results with no iteration are
// ErrNoData.
func LatencyPercentiles(w io.Writer, title string, results []perf.LatencyResult) error {
	p := gplot.New()
	p.Title.Text = title
	p.Y.Label.Text = "one-way latency (µs)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX("min", "median", "p99", "p99.9", "max")
	n := 0
	for _, r := range results {
		if r.Iterations == 0 {
			continue
		}
		xys := plotter.XYs{{X: 0, Y: r.MinUS}, {X: 1, Y: r.MedianUS}, {X: 2, Y: r.P99US}, {X: 3, Y: r.P999US}, {X: 4, Y: r.MaxUS}}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot: %s: %w", r.Device, err)
		}
		l.Color, pts.Color = plotutil.Color(n), plotutil.Color(n)
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("%s %s", r.Device, units.Format(int64(r.Size), units.Compact)), l, pts)
		n++
	}
	if n == 0 {
		return ErrNoData
	}
	return writeSVG(w, p, 8, 4.5)
}

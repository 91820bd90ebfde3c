package plot

import (
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/erdmakit/erdmakit/perf"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// Sweep writes an SVG chart of a bw sweep: average Gbit/s against message
// size, one line per device and, with more than one device, their total.
// No results is ErrNoData.
func Sweep(w io.Writer, title string, results []perf.Result) error {
	byDev := map[string]plotter.XYs{}
	total := map[int]float64{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		if r.Size <= 0 {
			continue
		}
		byDev[r.Device] = append(byDev[r.Device], plotter.XY{X: float64(r.Size), Y: r.AvgGbps})
		total[r.Size] += r.AvgGbps
		lo, hi = math.Min(lo, float64(r.Size)), math.Max(hi, float64(r.Size))
	}
	if len(byDev) == 0 {
		return ErrNoData
	}
	p := gplot.New()
	p.Title.Text = title
	p.Y.Label.Text = "RDMA write bandwidth (Gbit/s)"
	sizeAxis(p, lo, hi)
	p.Add(plotter.NewGrid())
	devs := make([]string, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	var lines []any
	for _, d := range devs {
		xys := byDev[d]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		lines = append(lines, d, xys)
	}
	if len(devs) > 1 {
		var xys plotter.XYs
		for s, g := range total {
			xys = append(xys, plotter.XY{X: float64(s), Y: g})
		}
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		lines = append(lines, "total", xys)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	p.Legend.Top = false
	p.Legend.Left = true
	p.Y.Min = 0 // bandwidth from zero: a 4% dip must not look like a collapse
	return writeSVG(w, p, 8, 5)
}

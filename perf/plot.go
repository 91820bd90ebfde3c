package perf

import (
	"fmt"
	"io"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotSVG draws a sweep: average Gbit/s against message size (log2 x-axis),
// one line per device and, with more than one device, their total.
func PlotSVG(w io.Writer, title string, results []Result) error {
	byDev := map[string]plotter.XYs{}
	total := map[int]float64{}
	for _, r := range results {
		byDev[r.Device] = append(byDev[r.Device], plotter.XY{X: float64(r.Size), Y: r.AvgGbps})
		total[r.Size] += r.AvgGbps
	}
	if len(byDev) == 0 {
		return fmt.Errorf("plot: no results")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "RDMA write bandwidth (Gbit/s)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = log2Ticks{}
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
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// log2Ticks labels powers of two: 2, 64, 1K, 64K, 1M, 8M.
type log2Ticks struct{}

func (log2Ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for v := 1.0; v <= max*2; v *= 2 {
		if v < min/2 {
			continue
		}
		t := plot.Tick{Value: v}
		if e := exp2(v); e%2 == 0 {
			t.Label = sizeLabel(int(v))
		}
		ts = append(ts, t)
	}
	return ts
}

func exp2(v float64) int {
	e := 0
	for x := 1.0; x < v; x *= 2 {
		e++
	}
	return e
}

// sizeLabel prints a size in bytes the way perftest users read them.
func sizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

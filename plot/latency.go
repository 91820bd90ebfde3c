package plot

import (
	"fmt"
	"io"
	"math"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/erdmakit/erdmakit/internal/units"
	"github.com/erdmakit/erdmakit/perf"
)

// latencyBins is how many bins a latency histogram has.
const latencyBins = 60

// LatencyHistogram writes an SVG histogram of `bw lat` samples: one-way
// latency in µs against the share of round trips, one outline per device
// and size, all on the same bins from the lowest minimum to the highest
// p99.9 (the samples above it, the tail, are counted in the last bin, so
// that a few outliers do not squeeze the body into one bar). Results
// without samples are ErrNoData.
func LatencyHistogram(w io.Writer, title string, results []perf.LatencyResult) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		if len(r.Samples) > 0 {
			lo, hi = math.Min(lo, r.MinUS), math.Max(hi, r.P999US)
		}
	}
	if math.IsInf(lo, 1) {
		return ErrNoData
	}
	if hi <= lo {
		hi = lo + 1
	}
	width := (hi - lo) / latencyBins
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "one-way latency (µs): RDMA write round trip / 2"
	p.Y.Label.Text = "share of round trips (%)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	i := 0
	for _, r := range results {
		if len(r.Samples) == 0 {
			continue
		}
		bins := make([]plotter.HistogramBin, latencyBins)
		for b := range bins {
			bins[b].Min, bins[b].Max = lo+float64(b)*width, lo+float64(b+1)*width
		}
		share := 100 / float64(len(r.Samples))
		for _, d := range r.Samples {
			b := int((float64(d)/float64(time.Microsecond) - lo) / width)
			bins[min(max(b, 0), latencyBins-1)].Weight += share
		}
		h := &plotter.Histogram{Bins: bins, Width: width, LineStyle: plotter.DefaultLineStyle}
		h.LineStyle.Color = plotutil.Color(i)
		h.LineStyle.Width *= 1.5
		p.Add(h)
		p.Legend.Add(fmt.Sprintf("%s %s: median %.2f µs, p99 %.2f µs", r.Device, units.Format(int64(r.Size), units.Compact), r.MedianUS, r.P99US), h)
		i++
	}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min = 0
	return writeSVG(w, p, 8, 5)
}

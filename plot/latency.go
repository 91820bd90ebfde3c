package plot

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/erdmakit/erdmakit/internal/units"
)

// Latency is one device and message size's one-way write latency: the
// samples for a histogram, the statistics (µs) for the percentiles
// (perf.LatencyResult's figures; package report converts them).
type Latency struct {
	Device string
	Size   int // bytes per write
	// Iterations is how many round trips the statistics are of: 0 is no
	// measurement.
	Iterations                     int
	MinUS, MedianUS, P99US, P999US float64
	MaxUS                          float64
	Samples                        []time.Duration
}

// name is the legend's name of l: device and size.
func (l *Latency) name() string {
	return fmt.Sprintf("%s %s", l.Device, units.Format(int64(l.Size), units.Compact))
}

// latencyBins is how many bins a latency histogram has.
const latencyBins = 60

// LatencyHistogram writes an SVG histogram of `bw lat` samples: one-way
// latency in µs against the share of round trips, one outline per device
// and size, all on the same bins from the lowest minimum to the highest
// p99.9 (the samples above it, the tail, are counted in the last bin, so
// that a few outliers do not squeeze the body into one bar). Results
// without samples are ErrNoData.
func LatencyHistogram(w io.Writer, title string, results []Latency) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		if len(r.Samples) > 0 && finite(r.MinUS) && finite(r.P999US) {
			lo, hi = math.Min(lo, r.MinUS), math.Max(hi, r.P999US)
		}
	}
	if !finite(lo) || !finite(hi) || !finite(hi-lo) {
		return ErrNoData
	}
	if hi-lo <= math.Abs(lo)*1e-9 {
		hi = lo + math.Max(1, math.Abs(lo)*1e-3)
	}
	width := (hi - lo) / latencyBins
	var shares [][]float64
	top := 0.0
	for _, r := range results {
		if len(r.Samples) == 0 {
			continue
		}
		bins := make([]float64, latencyBins)
		share := 100 / float64(len(r.Samples))
		for _, d := range r.Samples {
			b := int((float64(d)/float64(time.Microsecond) - lo) / width)
			bins[min(max(b, 0), latencyBins-1)] += share
		}
		top = max(top, slices.Max(bins))
		shares = append(shares, bins)
	}
	ch := newChart(768, 480, linearAxis("one-way latency (µs): RDMA write round trip / 2", lo, hi, false),
		linearAxis("share of round trips (%)", 0, top*1.05, true), layout{title: title})
	var entries []entry
	for _, r := range results {
		if len(r.Samples) == 0 {
			continue
		}
		i := len(entries)
		// The outline of the bars: up and down at each bin's edges.
		xs, ys := []float64{lo}, []float64{0}
		for b, s := range shares[i] {
			x0, x1 := lo+float64(b)*width, lo+float64(b+1)*width
			xs, ys = append(xs, x0, x1), append(ys, s, s)
		}
		xs, ys = append(xs, hi), append(ys, 0)
		e := entry{name: fmt.Sprintf("%s: median %.2f µs, p99 %.2f µs", r.name(), r.MedianUS, r.P99US), colour: colour(i)}
		ch.series(xs, ys, e.colour, false, false)
		entries = append(entries, e)
	}
	ch.legend(topRight, entries...)
	return ch.write(w)
}

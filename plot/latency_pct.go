package plot

import "io"

// LatencyPercentiles writes an SVG chart of latency results without their
// samples (`bw lat` read back from --json): one line per device and size
// through min, median, p99, p99.9 and max, in µs. Results with no
// iteration are ErrNoData.
func LatencyPercentiles(w io.Writer, title string, results []Latency) error {
	top, n := 0.0, 0
	for _, r := range results {
		if r.Iterations > 0 {
			top, n = highest(top, r.MinUS, r.MedianUS, r.P99US, r.P999US, r.MaxUS), n+1
		}
	}
	if n == 0 {
		return ErrNoData
	}
	x := nominalAxis("", []string{"min", "median", "p99", "p99.9", "max"}, 1)
	ch := newChart(768, 432, x, linearAxis("one-way latency (µs)", 0, top*1.05, true), layout{title: title})
	var entries []entry
	for _, r := range results {
		if r.Iterations == 0 {
			continue
		}
		e := entry{name: r.name(), colour: colour(len(entries)), points: true}
		ch.series([]float64{0, 1, 2, 3, 4}, []float64{r.MinUS, r.MedianUS, r.P99US, r.P999US, r.MaxUS}, e.colour, true, false)
		entries = append(entries, e)
	}
	ch.legend(topLeft, entries...)
	return ch.write(w)
}

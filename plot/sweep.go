package plot

import (
	"io"
	"math"
	"slices"
)

// Bandwidth is one measurement of a bandwidth sweep: a device's average
// bandwidth at one message size (perf.Result's and perftest's figures;
// package report converts them).
type Bandwidth struct {
	Device string
	Size   int     // bytes per message
	Gbps   float64 // average Gbit/s
}

// Sweep writes an SVG chart of a bw sweep: average Gbit/s against message
// size, one line per device and, with more than one device, their total.
// No measurement of a positive size is ErrNoData.
func Sweep(w io.Writer, title string, results []Bandwidth) error {
	byDev := map[string][]Bandwidth{}
	total := map[int]float64{}
	lo, hi, top := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range results {
		if r.Size <= 0 {
			continue
		}
		byDev[r.Device] = append(byDev[r.Device], r)
		total[r.Size] += r.Gbps
		lo, hi = math.Min(lo, float64(r.Size)), math.Max(hi, float64(r.Size))
	}
	if len(byDev) == 0 {
		return ErrNoData
	}
	type line struct {
		name   string
		xs, ys []float64
	}
	var lines []line
	add := func(name string, sizes []int, gbps func(i int) float64) {
		l := line{name: name}
		for i, s := range sizes {
			l.xs, l.ys = append(l.xs, float64(s)), append(l.ys, gbps(i))
			top = highest(top, gbps(i))
		}
		lines = append(lines, l)
	}
	devs := make([]string, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, d)
	}
	slices.Sort(devs)
	for _, d := range devs {
		rs := byDev[d]
		slices.SortStableFunc(rs, func(a, b Bandwidth) int { return a.Size - b.Size })
		sizes := make([]int, len(rs))
		for i, r := range rs {
			sizes[i] = r.Size
		}
		add(d, sizes, func(i int) float64 { return rs[i].Gbps })
	}
	if len(devs) > 1 {
		sizes := make([]int, 0, len(total))
		for s := range total {
			sizes = append(sizes, s)
		}
		slices.Sort(sizes)
		add("total", sizes, func(i int) float64 { return total[sizes[i]] })
	}
	// Bandwidth from zero: a 4% dip must not look like a collapse.
	ch := newChart(768, 480, sizeAxis(lo, hi), linearAxis("RDMA write bandwidth (Gbit/s)", 0, top*1.05, true), layout{title: title})
	entries := make([]entry, len(lines))
	for i, l := range lines {
		entries[i] = entry{name: l.name, colour: colour(i), points: true}
		ch.series(l.xs, l.ys, entries[i].colour, true, false)
	}
	ch.legend(bottomRight, entries...)
	return ch.write(w)
}

package plot

import (
	"fmt"
	"io"
	"math"

	"github.com/erdmakit/erdmakit/nccl/ncclog"
)

// BusBW writes an SVG chart of an nccl-tests result: bus bandwidth against
// message size, out-of-place and in-place, with a dashed line at expectGBs
// when it is positive. A result without a row of positive size is ErrNoData.
func BusBW(w io.Writer, res *ncclog.TestResult, title string, expectGBs float64) error {
	var xs, out, in []float64
	if res != nil {
		for _, r := range res.Rows {
			if r.Size <= 0 {
				continue
			}
			xs = append(xs, float64(r.Size))
			out = append(out, r.OutOfPlace.BusBWGB)
			in = append(in, r.InPlace.BusBWGB)
		}
	}
	if len(xs) == 0 {
		return ErrNoData
	}
	lo, hi, top := xs[0], xs[0], expectGBs
	for i := range xs {
		lo, hi = math.Min(lo, xs[i]), math.Max(hi, xs[i])
		top = highest(top, out[i], in[i])
	}
	x := sizeAxis(lo, hi)
	ch := newChart(768, 432, x, linearAxis("bus bandwidth (GB/s)", 0, top*1.05, true), layout{title: title})
	entries := []entry{{name: "out-of-place", colour: colour(0), points: true}, {name: "in-place", colour: colour(1), points: true}}
	if expectGBs > 0 {
		e := entry{name: fmt.Sprintf("expected %.1f GB/s", expectGBs), colour: colour(2), dashed: true}
		ch.series([]float64{x.min, x.max}, []float64{expectGBs, expectGBs}, e.colour, false, true)
		entries = append(entries, e)
	}
	ch.series(xs, out, colour(0), true, false)
	ch.series(xs, in, colour(1), true, false)
	ch.legend(topLeft, entries...)
	return ch.write(w)
}

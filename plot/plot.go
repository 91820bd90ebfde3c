package plot

import "errors"

// ErrNoData is returned when the input has nothing a chart could show (no
// rows, no results, fewer than two hosts).
var ErrNoData = errors.New("plot: nothing to plot")

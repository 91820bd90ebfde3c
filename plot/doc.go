// Package plot draws erdmakit's results as SVG charts: NCCL bus bandwidth
// against message size, a bw sweep per device, a fleet mesh heat map.
//
// It is the only package that imports gonum.org/v1/plot, so the domain
// packages (nccl, perf, fleet) and their parsers stay free of it. Each chart
// is one function taking a report type and an io.Writer; a chart with
// nothing to draw returns ErrNoData.
package plot

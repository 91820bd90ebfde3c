// Package plot draws erdmakit's results as SVG charts: NCCL bus bandwidth
// against message size, a bw sweep per device, a fleet mesh heat map,
// latency histograms and percentiles, NCCL's channels per transport and NIC.
//
// It imports only the standard library and the module's portable packages
// (ncclog's parsers, small internal helpers), so that a laptop (any OS,
// CGO_ENABLED=0) can chart a cluster's results: the charts of nccl-tests
// and NCCL logs take ncclog's types, the others plain data ([Bandwidth],
// [Latency], [Mesh]) that package report converts perf's and fleet's
// results to. Each chart is one function writing one self-contained SVG
// document (no scripts, no references elsewhere, the text escaped) to an
// io.Writer; a chart with nothing to draw returns ErrNoData.
package plot

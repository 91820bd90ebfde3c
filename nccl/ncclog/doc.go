// Package ncclog reads the logs of an NCCL job: nccl-tests results
// (ParseTests, TestParser), NCCL_DEBUG=INFO output (Analyze, Analyzer: the
// network NCCL chose, "RDMA or sockets?" as a NetTransport, GPUDirect RDMA,
// the use of each NIC) and the launcher's failures (ClassifyLaunch), and
// judges what a log alone says (Diagnose).
//
// It imports only the standard library (and erdmakit's health), so a laptop
// can parse a cluster's logs: it builds with CGO_ENABLED=0 for any OS.
// Package nccl runs the tests and adds what needs the host (the expected
// bandwidth, the environment advice); its TestResult, Row and LogSummary are
// aliases of this package's types. Every reader takes a context and returns
// its error once it ends, even while the reader blocks (a FIFO, stdin).
package ncclog

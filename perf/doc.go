// Package perf measures RDMA write bandwidth the way perftest's ib_write_bw
// does, natively: a Server and a Client agree on a test over a small
// out-of-band TCP protocol of our own (versioned, length-prefixed, bounded
// in size and time), connect queue pairs on each side's device, and the
// client's write loop keeps every queue pair's send queue full of RDMA
// writes into the server's buffer, polling completions in batches.
//
// The engine drives a Link (one device): the verbs implementation opens real
// queue pairs through package ibverbs; NewEmulatedLink is an emulated wire
// of known rate, for trying the protocol without RDMA and for examples. Results carry bytes, messages, average and
// peak Gbit/s (10^9 bit/s), Mpps and, where the device has hw_counters, the
// counter deltas that prove the bytes crossed the RDMA device.
//
// Write latency is measured the way ib_write_lat does: LatencyClient (or
// LatencyLoopback) plays an RDMA write ping-pong on one queue pair against
// the same Server, each side busy-polling the last byte of its buffer, and
// reports one-way latencies (round trip / 2) with their median, p99 and
// p99.9 (LatencyStats), keeping the samples for a histogram.
//
// A program that runs write loops calls RaiseMaxProcs once at start: on a
// one-CPU host, Go's runtime would otherwise take the loop's only P back
// during every long post call (on software RDMA the post does the device's
// work).
//
// Package perf/perftest runs and parses Debian/OFED ib_write_bw and
// ib_write_lat themselves.
package perf

// Package perf measures RDMA write bandwidth the way perftest's ib_write_bw
// does, natively: a Server and a Client agree on a test over a small
// out-of-band TCP protocol of our own (versioned, length-prefixed, bounded
// in size and time), connect queue pairs on each side's device, and the
// client's write loop keeps every queue pair's send queue full of RDMA
// writes into the server's buffer, polling completions in batches.
//
// The engine drives a Link (one device): the verbs implementation opens real
// queue pairs through package ibverbs; FakeLink is an emulated wire of known
// rate, for tests and examples. Results carry bytes, messages, average and
// peak Gbit/s (10^9 bit/s), Mpps and, where the device has hw_counters, the
// counter deltas that prove the bytes crossed the RDMA device.
//
// A program that runs write loops calls RaiseMaxProcs once at start: on a
// one-CPU host, Go's runtime would otherwise take the loop's only P back
// during every long post call (on software RDMA the post does the device's
// work).
//
// Package perf/perftest runs and parses Debian/OFED ib_write_bw itself.
package perf

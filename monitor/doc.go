// Package monitor turns successive readings of RDMA port counters into rates
// and events, like `eadm stat -l`, and exposes the host to Prometheus.
//
// A Sample is one reading of every port; Diff compares two Samples taken an
// interval apart and returns per-port rates (bytes and packets each way), the
// error and drop counters that moved, and port state changes. Counters that
// go backwards (a driver reload resets them; some hardware counters are 32
// bits wide and wrap) never become huge negative or positive rates.
package monitor

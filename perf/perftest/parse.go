// Package perftest runs and parses the linux-rdma perftest tools
// (ib_write_bw and its relatives). This file holds the log parser: Parse
// reads any ib_write_bw, ib_read_bw, ib_send_bw or *_lat log, including
// server and client output interleaved in one file, and reports the header,
// the result rows normalised to Gbit/s, and the errors perftest printed.
package perftest

import (
	"errors"
	"io"
)

// ErrNoReport is returned by Parse when the input holds nothing perftest
// prints: no test header, no result row and no perftest error message.
var ErrNoReport = errors.New("no perftest output found")

// Report is what one perftest log says. Its JSON names are a public schema.
type Report struct {
	Test      string `json:"test"`      // the title line, e.g. "RDMA_Write BW Test"
	Device    string `json:"device"`    // "Device : mlx5_0"
	QPs       int    `json:"qps"`       // "Number of qps : 4"
	Transport string `json:"transport"` // "Transport type : IB" (IB or IW)
	LinkType  string `json:"link_type"` // "Link type : Ethernet" (IB or Ethernet)
	RDMACM    bool   `json:"rdma_cm"`   // "rdma_cm QPs : ON"
	// Results are the bandwidth rows, one per message size, bandwidth in
	// Gbit/s (10^9 bit/s) whatever unit the log used.
	Results []Result `json:"results"`
	// Errors are the error messages perftest printed, in order, deduplicated.
	Errors []string `json:"errors"`

	// Role is "server" (the log shows "Waiting for client to connect"),
	// "client", or "server+client" when both sides' output is interleaved.
	Role           string `json:"role,omitempty"`
	ConnectionType string `json:"connection_type,omitempty"` // RC, UC, UD, XRC, DC
	Bidirectional  bool   `json:"bidirectional"`             // "Bidirectional" in the title
	MTU            int    `json:"mtu,omitempty"`             // bytes, "Mtu : 4096[B]"
	GIDIndex       *int   `json:"gid_index,omitempty"`       // "GID index : 3"; nil when not printed
	TXDepth        int    `json:"tx_depth,omitempty"`
	CQModeration   int    `json:"cq_moderation,omitempty"`
	PostList       int    `json:"post_list,omitempty"`
	MaxInline      int    `json:"max_inline,omitempty"` // bytes
	DataExchange   string `json:"data_exchange,omitempty"`
	// Units is the bandwidth unit of the log's table before normalisation:
	// "MB/sec", "MiB/sec" (both 2^20 bytes/s) or "Gb/sec".
	Units string `json:"units,omitempty"`
	// Local and Remote are the QP address lines ("local address: LID ...").
	Local  []Address `json:"local,omitempty"`
	Remote []Address `json:"remote,omitempty"`
	// Latency holds the rows of a latency test's table (ib_*_lat).
	Latency []LatencyResult `json:"latency,omitempty"`
	// Warnings are perftest's warnings ("WARNING: BW peak won't be measured",
	// "Conflicting CPU frequency values detected", ...), deduplicated.
	Warnings []string `json:"warnings,omitempty"`
	// DurationS is "Total run time: 187.693s" when the log has it.
	DurationS float64 `json:"duration_s,omitempty"`
}

// Result is one row of a bandwidth table.
type Result struct {
	Bytes       int64   `json:"bytes"`
	Iterations  int64   `json:"iterations"`
	BWPeakGbps  float64 `json:"bw_peak_gbps"` // 0 where perftest did not measure it (-D)
	BWAvgGbps   float64 `json:"bw_avg_gbps"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
}

// LatencyResult is one row of a latency table, times in microseconds.
type LatencyResult struct {
	Bytes      int64   `json:"bytes"`
	Iterations int64   `json:"iterations"`
	MinUS      float64 `json:"t_min_us"`
	MaxUS      float64 `json:"t_max_us"`
	TypicalUS  float64 `json:"t_typical_us"`
	AvgUS      float64 `json:"t_avg_us,omitempty"`
	StdevUS    float64 `json:"t_stdev_us,omitempty"`
	P99US      float64 `json:"p99_us,omitempty"`
	P999US     float64 `json:"p99_9_us,omitempty"`
}

// Address is one "local address:" or "remote address:" line and its GID.
type Address struct {
	LID   uint32 `json:"lid"`
	QPN   uint32 `json:"qpn"`
	PSN   uint32 `json:"psn"`
	RKey  uint32 `json:"rkey,omitempty"`
	VAddr uint64 `json:"vaddr,omitempty"`
	GID   string `json:"gid,omitempty"` // as an IP address, e.g. "::ffff:10.0.2.15"
}

// OK reports whether the log shows a finished test without errors: at least
// one result row (bandwidth or latency) and no error message.
func (r *Report) OK() bool {
	return len(r.Errors) == 0 && (len(r.Results) > 0 || len(r.Latency) > 0)
}

// Parse reads a perftest log from r. It returns ErrNoReport (wrapped) when
// the input holds no perftest output at all, and a read error if r fails.
func Parse(r io.Reader) (*Report, error) {
	return nil, errors.New("not implemented yet")
}

// Package perftest runs and parses the linux-rdma perftest tools
// (ib_write_bw and its relatives). Parse reads any ib_write_bw, ib_read_bw,
// ib_send_bw or *_lat log, including server and client output interleaved in
// one file, and reports the header, the result rows normalised to Gbit/s, and
// the errors perftest printed.
package perftest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/ctxio"
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
	GIDIndex       Int    `json:"gid_index,omitzero"`        // "GID index : 3"; not Known (no key) when not printed
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

	// RowsDropped counts distinct result rows (bandwidth and latency) past
	// the first 1024 kept, AddressesDropped distinct QP address lines past
	// the first 1024 local and 1024 remote, MessagesDropped distinct errors
	// and warnings past the first 64 of each: a log that holds more (many
	// runs concatenated, noise) keeps memory bounded and says how much it left out.
	RowsDropped      int `json:"rows_dropped,omitempty"`
	AddressesDropped int `json:"addresses_dropped,omitempty"`
	MessagesDropped  int `json:"messages_dropped,omitempty"`
}

// Bounds on what a Report keeps of one log.
const (
	maxRows      = 1024 // result rows, bandwidth and latency each
	maxAddresses = 1024 // local and remote QP address lines each
	maxMessages  = 64   // distinct errors and distinct warnings each
)

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
	AvgUS      float64 `json:"t_avg_us"`
	StdevUS    float64 `json:"t_stdev_us"` // 0 where ib_write_lat printed -nan (its stdev overflows past ~46 ms)
	P99US      float64 `json:"p99_us"`
	P999US     float64 `json:"p99_9_us"`
}

// Address is one "local address:" or "remote address:" line and its GID.
type Address struct {
	LID   uint32 `json:"lid"`
	QPN   uint32 `json:"qpn"`
	PSN   uint32 `json:"psn"`
	RKey  uint32 `json:"rkey,omitempty"`
	VAddr uint64 `json:"vaddr,omitempty"`
	GID   string `json:"gid,omitempty"` // as an IP address, IPv4-mapped ones dotted: "10.0.2.15"
}

// OK reports whether the log shows a finished test without errors: at least
// one result row (bandwidth or latency) and no error message.
func (r *Report) OK() bool {
	return len(r.Errors) == 0 && (len(r.Results) > 0 || len(r.Latency) > 0)
}

// Parse reads a perftest log from r. It returns ErrNoReport (wrapped) when
// the input holds no perftest output at all, a read error if r fails, and
// ctx's error (wrapped) once ctx is done, even while r blocks.
//
// Server and client output interleaved in one file (both processes writing
// to one terminal) are merged: header fields are taken from the first line
// that has them, a result row identical to one already read is the other
// side's copy and is dropped, and errors are deduplicated.
func Parse(ctx context.Context, r io.Reader) (*Report, error) {
	p := newParser()
	if err := eachLine(ctxio.NewReader(ctx, r), p.line); err != nil {
		return nil, fmt.Errorf("reading perftest log: %w", err)
	}
	return p.finish()
}

// maxLine bounds one line: longer lines are cut there (perftest's own lines
// are under 200 bytes; a longer one is noise).
const maxLine = 1 << 20

// eachLine calls fn with every line of r, without the line ending, cutting
// lines longer than maxLine. The slice is only valid during the call.
func eachLine(r io.Reader, fn func(line string)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if len(long) < maxLine {
				long = append(long, chunk[:min(len(chunk), maxLine-len(long))]...)
			}
			continue
		case long != nil:
			if len(long) < maxLine {
				long = append(long, chunk[:min(len(chunk), maxLine-len(long))]...)
			}
			chunk, long = long, nil
		}
		if len(chunk) > 0 {
			fn(strings.TrimRight(string(chunk), "\r\n"))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
	}
}

type tableKind int

const (
	noTable tableKind = iota
	bwTable
	latTable
)

// The parser's dedup sets make each line cost O(1) whatever the log's size;
// each holds at most its list's bound.
type parser struct {
	rep     Report
	titles  int
	tables  int // result table headers read
	waiting bool
	client  bool // "Couldn't connect to": the client's side
	table   tableKind
	toGbps  float64 // multiplier from the table's unit to Gbit/s; 0 for an unknown unit
	// lastAddr is the address list and index that a following "GID:" line
	// completes; nil when the line before was not a new address.
	lastAddr              *[]Address
	lastIdx               int
	set                   map[string]bool // header fields already taken
	warned, errored       map[string]struct{}
	results               map[Result]struct{}
	latency               map[LatencyResult]struct{}
	localAddrs, remoteAdr map[Address]struct{} // without their GID
}

func newParser() *parser {
	return &parser{set: map[string]bool{}, warned: map[string]struct{}{}, errored: map[string]struct{}{},
		results: map[Result]struct{}{}, latency: map[LatencyResult]struct{}{},
		localAddrs: map[Address]struct{}{}, remoteAdr: map[Address]struct{}{}}
}

func (p *parser) finish() (*Report, error) {
	r := &p.rep
	if p.titles == 0 && p.tables == 0 && len(r.Results) == 0 && len(r.Latency) == 0 && len(r.Errors) == 0 {
		return nil, fmt.Errorf("perftest log: %w", ErrNoReport)
	}
	switch {
	case p.waiting && p.titles >= 2:
		r.Role = "server+client"
	case p.waiting:
		r.Role = "server"
	case p.titles > 0 || p.client:
		r.Role = "client"
	}
	if r.Results == nil {
		r.Results = []Result{}
	}
	if r.Errors == nil {
		r.Errors = []string{}
	}
	return r, nil
}

// errorPrefixes start the messages perftest prints when a test fails.
var errorPrefixes = []string{
	"Couldn't", "Couldnt", "Could not", "Unable to", "Failed to", "Failed status", "Did not detect",
	"If device exists", "Error", "ERROR", "error:", "Completion with error", "Problems with",
	"No IB devices", "IB device", "Conflicting parameters", "Requested ", "Port number",
	"Invalid ", "Device does not support", "Message Size", "Server: Couldn't", "Client: Couldn't",
}

// warningPrefixes start perftest's warnings.
var warningPrefixes = []string{
	"WARNING", "Warning", "Conflicting CPU frequency", "Device not recognized to implement",
	"Using sampled CPU speed", "Requested mtu is higher", "Requested SQ size",
}

func (p *parser) line(raw string) {
	t := strings.TrimSpace(raw)
	if t == "" || strings.HasPrefix(t, "---") || strings.HasPrefix(t, "***") {
		return
	}
	if p.tableRow(t) {
		return
	}
	switch {
	case strings.Contains(t, "Waiting for client"):
		p.waiting = true
		return
	case isTitle(t):
		p.titles++
		p.table = noTable
		if p.rep.Test == "" {
			p.rep.Test = t
			p.rep.Bidirectional = strings.Contains(t, "Bidirectional")
		} else if p.rep.Test != t {
			p.warn(fmt.Sprintf("log holds more than one test: %q and %q", p.rep.Test, t))
		}
		return
	case strings.HasPrefix(t, "#bytes"):
		p.tableHeader(t)
		return
	case strings.HasPrefix(t, "local address:"), strings.HasPrefix(t, "remote address:"):
		p.address(t)
		return
	case strings.HasPrefix(t, "GID:"):
		if p.lastAddr != nil && (*p.lastAddr)[p.lastIdx].GID == "" {
			(*p.lastAddr)[p.lastIdx].GID = parseGID(strings.TrimSpace(t[len("GID:"):]))
		}
		return
	case strings.HasPrefix(t, "Total run time:"):
		v := strings.TrimSuffix(strings.TrimSpace(t[len("Total run time:"):]), "s")
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			p.rep.DurationS = f
		}
		return
	}
	if msg, ok := matchPrefix(t, warningPrefixes); ok {
		p.warn(msg)
		return
	}
	if msg, ok := matchPrefix(t, errorPrefixes); ok {
		p.error(msg)
		return
	}
	if i := strings.Index(t, "Couldn't"); i > 0 {
		p.error(t)
		return
	}
	if strings.Contains(t, " : ") || strings.Contains(t, "\t: ") || strings.Contains(t, ": ") {
		p.header(t)
	}
}

// matchPrefix returns t when it starts with one of prefixes. A shell prompt
// before the message ("[user@host ~]$ Using sampled ...") is cut off first.
func matchPrefix(t string, prefixes []string) (string, bool) {
	if i := strings.Index(t, "$ "); i >= 0 && i < 80 {
		if rest := strings.TrimSpace(t[i+2:]); hasAnyPrefix(rest, prefixes) {
			return rest, true
		}
	}
	return t, hasAnyPrefix(t, prefixes)
}

func hasAnyPrefix(t string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(t, pre) {
			return true
		}
	}
	return false
}

func (p *parser) warn(msg string) {
	p.addMessage(&p.rep.Warnings, p.warned, msg)
}

func (p *parser) error(msg string) {
	if strings.HasPrefix(msg, "Couldn't connect to") {
		p.client = true
	}
	p.addMessage(&p.rep.Errors, p.errored, msg)
}

// addMessage appends msg to list unless it is in seen; past maxMessages
// distinct ones, a message not seen is counted as dropped.
func (p *parser) addMessage(list *[]string, seen map[string]struct{}, msg string) {
	if _, ok := seen[msg]; ok {
		return
	}
	if len(*list) >= maxMessages {
		p.rep.MessagesDropped++
		return
	}
	seen[msg] = struct{}{}
	*list = append(*list, msg)
}

// isTitle recognises "RDMA_Write BW Test", "Send Latency Test",
// "RDMA_Write Bidirectional BW Test", "RDMA_Write Post List BW Test".
func isTitle(t string) bool {
	return strings.HasSuffix(t, " Test") && !strings.Contains(t, ":") && len(t) < 80 &&
		(strings.Contains(t, " BW ") || strings.Contains(t, " Latency "))
}

// tableHeader starts a result table: "#bytes #iterations BW peak[MB/sec] ..."
// or "#bytes #iterations t_min[usec] ...".
func (p *parser) tableHeader(t string) {
	p.tables++
	switch {
	case strings.Contains(t, "t_min") || strings.Contains(t, "[usec]"):
		p.table = latTable
	case strings.Contains(t, "BW"):
		p.table = bwTable
		unit := ""
		if i := strings.Index(t, "BW average["); i >= 0 {
			unit = t[i+len("BW average["):]
		} else if i := strings.Index(t, "BW peak["); i >= 0 {
			unit = t[i+len("BW peak["):]
		}
		if j := strings.IndexByte(unit, ']'); j >= 0 {
			unit = unit[:j]
		}
		p.toGbps = 0
		switch unit {
		case "MB/sec", "MiB/sec":
			p.toGbps = 8 * (1 << 20) / 1e9
		case "Gb/sec", "Gbit/sec":
			p.toGbps = 1
		default:
			p.warn(fmt.Sprintf("unknown bandwidth unit %q: its rows are ignored", unit))
		}
		if p.rep.Units == "" {
			p.rep.Units = unit
		}
	default:
		p.table = noTable
	}
}

// tableRow parses a result row when a table is open; false if t is not one.
func (p *parser) tableRow(t string) bool {
	if p.table == noTable || t[0] < '0' || t[0] > '9' {
		return false
	}
	var f [9]string
	n := 0
	for tok := range strings.FieldsSeq(t) {
		if n == len(f) {
			break
		}
		f[n] = tok
		n++
	}
	if n < 5 {
		return false
	}
	bytes, err1 := strconv.ParseInt(f[0], 10, 64)
	iters, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || bytes < 0 || iters < 0 {
		return false
	}
	var v [7]float64
	for i := 2; i < n; i++ {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			if i < 5 {
				return false
			}
			// ib_write_lat computes t_stdev through an int and prints
			// -nan once a sample is ~46 ms off the mean: that column is
			// left 0 and the percentiles after it still read.
			if p.table == latTable && notANumber(f[i]) {
				continue
			}
			break
		}
		v[i-2] = x
	}
	if p.table == latTable {
		l := LatencyResult{Bytes: bytes, Iterations: iters, MinUS: v[0], MaxUS: v[1], TypicalUS: v[2],
			AvgUS: v[3], StdevUS: v[4], P99US: v[5], P999US: v[6]}
		if _, ok := p.latency[l]; ok {
			return true
		}
		if len(p.rep.Latency) >= maxRows {
			p.rep.RowsDropped++
			return true
		}
		p.latency[l] = struct{}{}
		p.rep.Latency = append(p.rep.Latency, l)
		return true
	}
	if p.toGbps == 0 {
		return true
	}
	res := Result{Bytes: bytes, Iterations: iters, BWPeakGbps: round6(v[0] * p.toGbps),
		BWAvgGbps: round6(v[1] * p.toGbps), MsgRateMpps: v[2]}
	if _, ok := p.results[res]; ok {
		return true
	}
	if len(p.rep.Results) >= maxRows {
		p.rep.RowsDropped++
		return true
	}
	p.results[res] = struct{}{}
	p.rep.Results = append(p.rep.Results, res)
	return true
}

// notANumber is a printf rendering of NaN or infinity ("-nan", "inf").
func notANumber(tok string) bool {
	t := strings.TrimLeft(strings.ToLower(tok), "+-")
	return strings.HasPrefix(t, "nan") || strings.HasPrefix(t, "inf")
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// address parses "local address: LID 0xd06 QPN 0x095f PSN 0x3c9e82 RKey
// 0x080359 VAddr 0x007f9fc479c000" (RKey, VAddr and OUT are optional).
func (p *parser) address(t string) {
	local := strings.HasPrefix(t, "local")
	var a Address
	toks := strings.Fields(t[strings.IndexByte(t, ':')+1:])
	for i := 0; i+1 < len(toks); i += 2 {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(toks[i+1]), "0x"), 16, 64)
		if err != nil {
			continue
		}
		switch toks[i] {
		case "LID":
			a.LID = uint32(v)
		case "QPN":
			a.QPN = uint32(v)
		case "PSN":
			a.PSN = uint32(v)
		case "RKey":
			a.RKey = uint32(v)
		case "VAddr":
			a.VAddr = v
		}
	}
	list, seen := &p.rep.Remote, p.remoteAdr
	if local {
		list, seen = &p.rep.Local, p.localAddrs
	}
	p.lastAddr = nil
	if _, ok := seen[a]; ok { // a has no GID yet: the key is the address without it
		return
	}
	if len(*list) >= maxAddresses {
		p.rep.AddressesDropped++
		return
	}
	seen[a] = struct{}{}
	*list = append(*list, a)
	p.lastAddr, p.lastIdx = list, len(*list)-1
}

// parseGID turns perftest's "00:00:...:255:255:10:00:02:15" (16 decimal
// bytes) into an IP address; anything else is kept as printed.
func parseGID(s string) string {
	parts := strings.Split(s, ":")
	if len(parts) != 16 {
		return s
	}
	ip := make(net.IP, 16)
	for i, part := range parts {
		v, err := strconv.ParseUint(part, 10, 8)
		if err != nil {
			return s
		}
		ip[i] = byte(v)
	}
	return ip.String()
}

// header takes the "Key : value" pairs of a header line; a line may hold two
// ("Dual-port : OFF\t\tDevice : ib0").
func (p *parser) header(t string) {
	for t != "" {
		i := strings.IndexByte(t, ':')
		if i <= 0 {
			return
		}
		key := strings.TrimSpace(t[:i])
		rest := strings.TrimLeft(t[i+1:], " \t")
		j := strings.IndexAny(rest, " \t")
		val := rest
		if j >= 0 {
			val, rest = rest[:j], strings.TrimLeft(rest[j:], " \t")
		} else {
			rest = ""
		}
		p.field(key, val)
		t = rest
	}
}

func (p *parser) field(key, val string) {
	if val == "" || p.set[key] {
		return
	}
	r := &p.rep
	num := func() (int, bool) {
		v := val
		if k := strings.IndexByte(v, '['); k >= 0 {
			v = v[:k]
		}
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	known := true
	switch key {
	case "Device":
		r.Device = val
	case "Number of qps":
		r.QPs, known = num()
	case "Transport type":
		r.Transport = val
	case "Link type":
		r.LinkType = val
	case "rdma_cm QPs":
		r.RDMACM = val == "ON"
	case "Connection type":
		r.ConnectionType = val
	case "Mtu":
		r.MTU, known = num()
	case "GID index":
		n, ok := num()
		if ok {
			r.GIDIndex = KnownInt(n)
		}
		known = ok
	case "TX depth":
		r.TXDepth, known = num()
	case "CQ Moderation":
		r.CQModeration, known = num()
	case "Post List":
		r.PostList, known = num()
	case "Max inline data":
		r.MaxInline, known = num()
	case "Data ex. method":
		r.DataExchange = val
	default:
		known = false
	}
	if known {
		p.set[key] = true
	}
}

// Int is a header number a log may not print (the GID index). It prints
// (%v) as the number or "N/A"; in JSON it is the number, and a field
// tagged omitzero is left out when unknown.
type Int struct {
	N     int
	Known bool // false: the log did not print it; N is 0
}

// KnownInt is the Int n.
func KnownInt(n int) Int { return Int{N: n, Known: true} }

// String is the number, or "N/A" when unknown.
func (i Int) String() string {
	if !i.Known {
		return "N/A"
	}
	return strconv.Itoa(i.N)
}

// IsZero reports an unknown number.
func (i Int) IsZero() bool { return !i.Known }

// MarshalJSON writes the number, or null when unknown.
func (i Int) MarshalJSON() ([]byte, error) {
	if !i.Known {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, int64(i.N), 10), nil
}

// UnmarshalJSON reads an integer or null.
func (i *Int) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*i = Int{}
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("number %.40q: want an integer or null: %w", b, err)
	}
	*i = KnownInt(n)
	return nil
}

package ncclog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// ErrNoTestOutput is returned by ParseTests when the input holds neither an
// nccl-tests header, a result row, a rank line, a footer nor a failure
// message (a launcher's or nccl-tests'). A pure NCCL_DEBUG log is not
// nccl-tests output: read it with Analyze.
var ErrNoTestOutput = errors.New("no nccl-tests output found")

// TestResult is what an nccl-tests log (all_reduce_perf and friends) says.
// Its JSON names are a public schema.
type TestResult struct {
	// Collective is the test binary, e.g. "all_reduce_perf", from
	// "# Collective test starting: X" or the command line in the log; empty
	// when the log does not say.
	Collective string `json:"collective"`
	Ranks      int    `json:"ranks"` // "#  Rank  N ..." lines
	Hosts      int    `json:"hosts"` // distinct hosts in those lines
	Rows       []Row  `json:"rows"`
	// AvgBusBW is the footer's "# Avg bus bandwidth : X" (GB/s): the average
	// over all sizes; for a threshold use one large size's row.
	AvgBusBW    float64 `json:"avg_busbw_gbs"`
	OutOfBounds int64   `json:"out_of_bounds"` // "# Out of bounds values : N OK|FAILED"
	// OK is false on any failure message, out-of-bounds value, row with
	// #wrong > 0, missing table or missing footer (an unfinished run).
	OK       bool     `json:"ok"`
	Failures []string `json:"failures"`
	// NCCL is the NCCL_DEBUG=INFO analysis of the NCCL lines in the same
	// log; nil when the log has none.
	NCCL *Summary `json:"nccl,omitempty"`

	// Format is the table layout: "root" (size count type redop root ...
	// #wrong), "error" (older: no root, an error column) or "nccl1" (NCCL
	// 1.x: bytes N type op ... res).
	Format string `json:"format,omitempty"`
	// Version is the nccl-tests version ("# nccl-tests version 2.17.8").
	Version string `json:"version,omitempty"`
	// NCCLLibrary is "nccl-library=22902" from the version line (0 if absent).
	NCCLLibrary int        `json:"nccl_library,omitempty"`
	Params      TestParams `json:"params"`
	Devices     []TestRank `json:"devices,omitempty"`
	FooterSeen  bool       `json:"footer_seen"` // the "Out of bounds values" line was read
	// RowsDropped counts rows past the first 65536 (a log of many runs
	// concatenated): they are checked for #wrong but not kept.
	RowsDropped int      `json:"rows_dropped,omitempty"`
	Reasons     []string `json:"reasons,omitempty"`
	// LaunchFailures are the launcher's own failures in the log (mpirun
	// refusing root, missing slots, daemons not started, srun's MPI
	// plugin), with their fix: often all a failed run printed.
	LaunchFailures []LaunchFailure `json:"launch_failures"`
}

// TestParams is the first header line: "# nThread 1 nGpus 1 minBytes 8 ...".
type TestParams struct {
	Threads     int    `json:"threads,omitempty"`
	GPUs        int    `json:"gpus,omitempty"`
	MinBytes    int64  `json:"min_bytes,omitempty"`
	MaxBytes    int64  `json:"max_bytes,omitempty"`
	Step        string `json:"step,omitempty"` // "2(factor)" or "1048576(bytes)"
	WarmupIters int    `json:"warmup_iters,omitempty"`
	Iters       int    `json:"iters,omitempty"`
	Validation  Count  `json:"validation,omitzero"` // "validation 1"; left out of JSON when not printed
}

// TestRank is one "#  Rank  0 Group  0 Pid 6899 on host device 0 [bus] GPU" line.
type TestRank struct {
	Rank   int    `json:"rank"`
	Pid    int    `json:"pid,omitempty"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id,omitempty"`
	GPU    string `json:"gpu,omitempty"`
}

// Row is one line of the results table: one message size.
type Row struct {
	Size       int64       `json:"size"`  // bytes
	Count      int64       `json:"count"` // elements
	Type       string      `json:"type"`
	Redop      string      `json:"redop"`
	Root       int         `json:"root"` // -1 where the collective has no root or the format no root column
	OutOfPlace Measurement `json:"out_of_place"`
	InPlace    Measurement `json:"in_place"`
}

// Measurement is the time/algbw/busbw/#wrong group for out-of-place or
// in-place.
type Measurement struct {
	TimeUS  float64 `json:"time_us"`
	AlgBWGB float64 `json:"algbw_gbs"` // GB/s as nccl-tests prints (10^9 bytes/s)
	BusBWGB float64 `json:"busbw_gbs"`
	// Wrong is #wrong; not Known where the log says N/A or the format has
	// an error column instead.
	Wrong Count `json:"wrong"`
	// Error is the older formats' max-error column when numeric (left out
	// of JSON when not).
	Error Float `json:"error,omitzero"`
}

// Count is a count a log may leave unknown: nccl-tests prints N/A in
// #wrong when it did not check. It prints (%v) as the number or "N/A", and
// is the number or null in JSON.
type Count struct {
	N     int64
	Known bool // false: the log did not give it; N is 0
}

// KnownCount is the Count n.
func KnownCount(n int64) Count { return Count{N: n, Known: true} }

// String is the number, or "N/A" when unknown.
func (c Count) String() string {
	if !c.Known {
		return "N/A"
	}
	return strconv.FormatInt(c.N, 10)
}

// MarshalJSON writes the number, or null when unknown.
func (c Count) MarshalJSON() ([]byte, error) {
	if !c.Known {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, c.N, 10), nil
}

// IsZero reports an unknown count (a field tagged omitzero is then left
// out of JSON).
func (c Count) IsZero() bool { return !c.Known }

// UnmarshalJSON reads a number or null.
func (c *Count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = Count{}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("count %.40q: want an integer or null: %w", b, err)
	}
	*c = KnownCount(n)
	return nil
}

// Float is a number a log may leave out (the older formats' max-error
// column). It prints (%v) as the number or "N/A", and is the number in
// JSON; tagged omitzero, an unknown one is left out.
type Float struct {
	V     float64
	Known bool // false: the log did not give it; V is 0
}

// KnownFloat is the Float v.
func KnownFloat(v float64) Float { return Float{V: v, Known: true} }

// String is the number, or "N/A" when unknown.
func (f Float) String() string {
	if !f.Known {
		return "N/A"
	}
	return strconv.FormatFloat(f.V, 'g', -1, 64)
}

// IsZero reports an unknown number.
func (f Float) IsZero() bool { return !f.Known }

// MarshalJSON writes the number as encoding/json writes a float64, or
// null when unknown.
func (f Float) MarshalJSON() ([]byte, error) {
	if !f.Known {
		return []byte("null"), nil
	}
	return json.Marshal(f.V)
}

// UnmarshalJSON reads a number or null.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float{}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("number %.40q: want a number or null: %w", b, err)
	}
	*f = KnownFloat(v)
	return nil
}

// ParseTests reads an nccl-tests log from r (streaming: rows are parsed as
// lines arrive; NCCL lines go to the NCCL log analyser). It returns
// ErrNoTestOutput (wrapped) when nothing in r looks like nccl-tests output
// (NCCL_DEBUG lines alone do not: Analyze reads those), a read error if r fails, and ctx's error (wrapped) once ctx is
// done, even while r blocks (a FIFO, a silent stdin).
func ParseTests(ctx context.Context, r io.Reader) (*TestResult, error) {
	p := NewTestParser()
	if err := eachLineBytes(ctxio.NewReader(ctx, r), readBuf, p.FeedBytes); err != nil {
		return nil, fmt.Errorf("reading nccl-tests log: %w", err)
	}
	if !p.recognised() && len(p.launch.Failures()) == 0 {
		return nil, fmt.Errorf("nccl-tests log: %w", ErrNoTestOutput)
	}
	return p.Result(), nil
}

// TestParser parses an nccl-tests log line by line, for a runner that shows
// rows as they arrive. ParseTests is built on it. Use NewTestParser.
type TestParser struct {
	// OnRow, when set, is called with each result row as soon as its line is fed.
	OnRow func(Row)
	// OnFailure, when set, is called with each failure line as it is fed.
	OnFailure func(string)

	res         TestResult
	log         *Analyzer
	launch      LaunchClassifier
	hosts       map[string]struct{}
	headerSeen  bool // the column header or the parameter line was read
	footerState string
	wrongRows   int
	cmdGuess    string
}

// NewTestParser returns a parser with an empty result.
func NewTestParser() *TestParser {
	return &TestParser{log: NewAnalyzer(), hosts: map[string]struct{}{}}
}

// Feed parses one line of output (with or without its trailing newline).
func (p *TestParser) Feed(line string) {
	p.FeedBytes([]byte(strings.TrimRight(line, "\r\n")))
}

// Bounds on what a TestResult keeps, whatever the log.
const (
	maxFailures = 64
	maxRows     = 1 << 16
)

// FeedBytes is Feed for a line held in a byte slice; it does not keep b.
func (p *TestParser) FeedBytes(b []byte) {
	b = bytes.TrimRight(b, "\r\n")
	if p.launch.Wants(b) {
		p.launch.Line(string(stripLauncherPrefix(b)))
	}
	if p.log.Feed(b) {
		return
	}
	t := strings.TrimSpace(string(stripLauncherPrefix(b)))
	if t == "" {
		return
	}
	if t[0] == '#' {
		p.comment(strings.TrimSpace(t[1:]))
		return
	}
	if p.row(t) {
		return
	}
	if isFailure(t) {
		if len(p.res.Failures) < maxFailures {
			p.res.Failures = append(p.res.Failures, clipString(t))
		}
		if p.OnFailure != nil {
			p.OnFailure(t)
		}
		return
	}
	if strings.HasPrefix(t, "nThread ") {
		p.params(t)
		return
	}
	if p.cmdGuess == "" && strings.Contains(t, "_perf") {
		p.cmdGuess = perfBinary(t)
	}
}

func clipString(s string) string {
	if len(s) > maxTextLen {
		return s[:maxTextLen]
	}
	return s
}

// stripLauncherPrefix removes Open MPI's --tag-output "[1,0]<stdout>:".
func stripLauncherPrefix(b []byte) []byte {
	if len(b) > 0 && b[0] == '[' {
		for _, tag := range [][]byte{[]byte("]<stdout>:"), []byte("]<stderr>:")} {
			if i := bytes.Index(b, tag); i > 0 && i < 32 {
				return b[i+len(tag):]
			}
		}
	}
	return b
}

// isFailure recognises nccl-tests' failure lines: "Test NCCL failure
// common.cu:1189 'unhandled cuda error'", "Test CUDA failure ...",
// " .. host pid 1: Test failure common.cu:1189", and NCCL 1.x's
// "NCCL failure all_reduce.cu:95 'unhandled cuda error'".
func isFailure(t string) bool {
	return strings.Contains(t, "Test NCCL failure") || strings.Contains(t, "Test CUDA failure") ||
		strings.Contains(t, ": Test failure") || strings.HasPrefix(t, "Test failure") ||
		strings.HasPrefix(t, "NCCL failure ") || strings.HasPrefix(t, "CUDA failure ") ||
		strings.HasPrefix(t, "Cuda failure ")
}

// perfBinary finds an nccl-tests binary ("./build/all_reduce_perf") in a command line.
func perfBinary(t string) string {
	for _, tok := range strings.Fields(t) {
		if i := strings.LastIndexByte(tok, '/'); i >= 0 {
			tok = tok[i+1:]
		}
		tok = strings.TrimSuffix(tok, "_mpi")
		if !strings.HasSuffix(tok, "_perf") || len(tok) <= len("_perf") {
			continue
		}
		ok := true
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				ok = false
				break
			}
		}
		if ok {
			return tok
		}
	}
	return ""
}

// comment handles a "#" line (t without the "#").
func (p *TestParser) comment(t string) {
	switch {
	case strings.HasPrefix(t, "nThread "):
		p.params(t)
	case strings.HasPrefix(t, "nccl-tests version "):
		f := strings.Fields(t)
		if len(f) >= 3 {
			p.res.Version = f[2]
		}
		for _, x := range f {
			if v, ok := strings.CutPrefix(x, "nccl-library="); ok {
				p.res.NCCLLibrary, _ = strconv.Atoi(v)
			}
		}
	case strings.HasPrefix(t, "Collective test starting:"):
		p.res.Collective = strings.TrimSpace(strings.TrimPrefix(t, "Collective test starting:"))
	case strings.HasPrefix(t, "NCCL Tests compiled with NCCL 1"):
		p.res.Format = "nccl1"
	case strings.HasPrefix(t, "Rank "):
		p.rank(t)
	case strings.HasPrefix(t, "Out of bounds values"):
		p.footer(t)
	case strings.HasPrefix(t, "Avg bus bandwidth"):
		if _, v, ok := strings.Cut(t, ":"); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				p.res.AvgBusBW = f
			}
		}
	case strings.Contains(t, "busbw") && (strings.Contains(t, "size") || strings.Contains(t, "bytes")):
		p.headerSeen = true
		switch {
		case strings.Contains(t, "root") || strings.Contains(t, "#wrong"):
			p.res.Format = "root"
		case strings.Contains(t, " res"):
			p.res.Format = "nccl1"
		case strings.Contains(t, "error"):
			p.res.Format = "error"
		}
	}
}

// params parses "nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step:
// 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0".
func (p *TestParser) params(t string) {
	p.headerSeen = true
	f := strings.Fields(strings.ReplaceAll(t, ":", " : "))
	pr := &p.res.Params
	for i := 0; i < len(f); i++ {
		next := func() string {
			for j := i + 1; j < len(f); j++ {
				if f[j] != ":" {
					i = j
					return f[j]
				}
			}
			return ""
		}
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		switch f[i] {
		case "nThread":
			pr.Threads = atoi(next())
		case "nGpus":
			pr.GPUs = atoi(next())
		case "minBytes":
			pr.MinBytes, _ = strconv.ParseInt(next(), 10, 64)
		case "maxBytes":
			pr.MaxBytes, _ = strconv.ParseInt(next(), 10, 64)
		case "step":
			pr.Step = next()
		case "warmup":
			if i+1 < len(f) && f[i+1] == "iters" {
				i++
				pr.WarmupIters = atoi(next())
			}
		case "agg":
			i++ // "agg iters: 1" is not kept
		case "iters":
			pr.Iters = atoi(next())
		case "validation":
			pr.Validation = KnownCount(int64(atoi(next())))
		}
	}
}

// rank parses "Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0
// [0000:04:00] NVIDIA H100 80GB HBM3" (Group and Pid are absent in older
// versions).
func (p *TestParser) rank(t string) {
	f := strings.Fields(t)
	var r TestRank
	ok := false
	for i := 0; i+1 < len(f); i++ {
		switch f[i] {
		case "Rank":
			r.Rank, _ = strconv.Atoi(f[i+1])
		case "Pid":
			r.Pid, _ = strconv.Atoi(f[i+1])
		case "on":
			r.Host = f[i+1]
			ok = true
		case "device":
			r.Device, _ = strconv.Atoi(f[i+1])
			if i+2 < len(f) && strings.HasPrefix(f[i+2], "[") {
				r.BusID = strings.Trim(f[i+2], "[]")
				r.GPU = strings.Join(f[i+3:], " ")
			}
			i = len(f)
		}
	}
	if !ok {
		return
	}
	p.res.Ranks++
	if len(p.res.Devices) < 4096 {
		p.res.Devices = append(p.res.Devices, r)
	}
	if _, seen := p.hosts[r.Host]; !seen && len(p.hosts) < 4096 {
		p.hosts[r.Host] = struct{}{}
	}
	p.res.Hosts = len(p.hosts)
}

// footer parses "Out of bounds values : 4 FAILED".
func (p *TestParser) footer(t string) {
	p.res.FooterSeen = true
	_, v, _ := strings.Cut(t, ":")
	f := strings.Fields(v)
	if len(f) > 0 {
		p.res.OutOfBounds, _ = strconv.ParseInt(f[0], 10, 64)
	}
	if len(f) > 1 {
		p.footerState = f[1]
	}
}

// row parses a result row; false if t is not one. A "host: " prefix (pdsh)
// is allowed.
func (p *TestParser) row(t string) bool {
	if t[0] < '0' || t[0] > '9' {
		if i := strings.Index(t, ": "); i > 0 && i < 64 && !strings.ContainsAny(t[:i], " \t") {
			t = strings.TrimSpace(t[i+2:])
			if t == "" || t[0] < '0' || t[0] > '9' {
				return false
			}
		} else {
			return false
		}
	}
	var f [16]string
	n := 0
	for tok := range strings.FieldsSeq(t) {
		if n == len(f) {
			return false
		}
		f[n] = tok
		n++
	}
	var r Row
	var err error
	if r.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.Size < 0 {
		return false
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil || r.Count < 0 {
		return false
	}
	if !isWord(f[2]) || !isWord(f[3]) {
		return false
	}
	r.Type, r.Redop, r.Root = f[2], f[3], -1
	var m []string
	switch n {
	case 13: // size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
		root, err := strconv.Atoi(f[4])
		if err != nil {
			return false
		}
		r.Root = root
		m = f[5:13]
		if p.res.Format == "" {
			p.res.Format = "root"
		}
	case 12: // size count type redop | time algbw busbw error | ...
		m = f[4:12]
		if p.res.Format == "" {
			p.res.Format = "error"
		}
	default:
		return false
	}
	var ok1, ok2 bool
	oldFormat := n == 12
	if r.OutOfPlace, ok1 = measurement(m[0:4], oldFormat); !ok1 {
		return false
	}
	if r.InPlace, ok2 = measurement(m[4:8], oldFormat); !ok2 {
		return false
	}
	if isWrong(r.OutOfPlace) || isWrong(r.InPlace) {
		p.wrongRows++
	}
	if len(p.res.Rows) < maxRows {
		p.res.Rows = append(p.res.Rows, r)
	} else {
		p.res.RowsDropped++
	}
	if p.OnRow != nil {
		p.OnRow(r)
	}
	return true
}

func isWrong(m Measurement) bool { return m.Wrong.N > 0 }

func isWord(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != "" && (s[0] < '0' || s[0] > '9')
}

// measurement parses "time algbw busbw #wrong"; in the older formats the
// last column is a max error (a float) instead of a count.
func measurement(f []string, errorColumn bool) (Measurement, bool) {
	var m Measurement
	var v [3]float64
	for i := range 3 {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return m, false
		}
		v[i] = x
	}
	m.TimeUS, m.AlgBWGB, m.BusBWGB = v[0], v[1], v[2]
	if f[3] == "N/A" {
		return m, true
	}
	if errorColumn {
		x, err := strconv.ParseFloat(f[3], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return m, false
		}
		m.Error = KnownFloat(x)
		return m, true
	}
	w, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || w < 0 {
		return m, false
	}
	m.Wrong = KnownCount(w)
	return m, true
}

// recognised reports whether anything fed looked like nccl-tests output.
func (p *TestParser) recognised() bool {
	return p.headerSeen || len(p.res.Rows) > 0 || len(p.res.Failures) > 0 || p.res.FooterSeen ||
		p.res.Ranks > 0
}

// Result returns the result of everything fed so far, with OK and the
// reasons decided as if the log ended here. It may be called more than once.
func (p *TestParser) Result() *TestResult {
	r := p.res
	r.Rows = append([]Row{}, p.res.Rows...)
	r.Failures = append([]string{}, p.res.Failures...)
	r.Devices = append([]TestRank(nil), p.res.Devices...)
	if r.Collective == "" {
		r.Collective = p.cmdGuess
	}
	if p.log.s.NCCLLines > 0 {
		r.NCCL = p.log.Summary()
	}
	var reasons []string
	r.LaunchFailures = p.launch.Failures()
	if r.LaunchFailures == nil {
		r.LaunchFailures = []LaunchFailure{}
	}
	for _, f := range r.LaunchFailures {
		reasons = append(reasons, fmt.Sprintf("the launcher failed: %s; fix: %s", f.Summary, f.Fix))
	}
	if len(r.Failures) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d failure message(s), first: %s", len(r.Failures), r.Failures[0]))
	}
	if len(r.Rows) == 0 {
		reasons = append(reasons, "no result rows")
	}
	if !r.FooterSeen {
		reasons = append(reasons, "no '# Out of bounds values' footer: the run did not finish")
	}
	if r.OutOfBounds > 0 || p.footerState == "FAILED" {
		reasons = append(reasons, fmt.Sprintf("%d out-of-bounds value(s): the results are wrong", r.OutOfBounds))
	}
	if p.wrongRows > 0 {
		reasons = append(reasons, fmt.Sprintf("%d row(s) with #wrong > 0: data corruption", p.wrongRows))
	}
	r.Reasons = reasons
	r.OK = len(reasons) == 0
	return &r
}

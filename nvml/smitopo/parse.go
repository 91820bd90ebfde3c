package smitopo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// ErrNoMatrix: the input holds no nvidia-smi topo -m header row.
var ErrNoMatrix = errors.New("no nvidia-smi topo -m matrix found")

// ErrIncompleteMatrix: the header names devices whose rows never came
// (truncated output).
var ErrIncompleteMatrix = errors.New("nvidia-smi topo -m matrix is incomplete")

// maxTopoLine bounds one line; nvidia-smi's rows are a few hundred bytes,
// so a longer line is noise (a pasted blob) and is skipped, not an error.
const maxTopoLine = 1 << 20

var (
	reColumnGap  = regexp.MustCompile(` {2,}`)
	reNICLegend  = regexp.MustCompile(`^\s*(NIC\d+):\s*(\S+)\s*$`)
	reDeviceWord = regexp.MustCompile(`^(GPU\d+|NIC\d+|mlx\d+_\d+|[a-z][a-z0-9_]*\d)$`)
)

// Parse reads `nvidia-smi topo -m` output (TAB-separated as the tool
// writes it, or space-aligned as it is often pasted) into a Matrix: the
// header row's device columns, one row per device, the trailing affinity
// columns (empty or "N/A" cells kept as printed) and the NIC legend's
// names. Lines around the matrix (prompts, other tools' output, the
// legend) are skipped. Once ctx is done it returns ctx's error (wrapped),
// even while r blocks.
func Parse(ctx context.Context, r io.Reader) (*Matrix, error) {
	lr := newLineReader(ctxio.NewReader(ctx, r), maxTopoLine)
	m := &Matrix{Source: "nvidia-smi"}
	var (
		lineNo  int
		labels  []string // device columns
		rows    = map[string]int{}
		inRows  bool
		done    bool
		gotRows int
	)
	for {
		raw, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading nvidia-smi topo -m output at line %d: %w", lineNo+1, err)
		}
		lineNo++
		if tooLong {
			continue
		}
		line := strings.TrimRight(raw, "\r")
		if labels == nil {
			if l, aff, ok := parseTopoHeader(line); ok {
				labels, m.AffinityColumns = l, aff
				m.Endpoints = make([]Endpoint, len(labels))
				m.Links = make([][]Link, len(labels))
				for i, s := range labels {
					m.Endpoints[i].Label = s
					rows[s] = i
				}
				inRows = true
			}
			continue
		}
		if inRows && !done {
			cells := splitTopoRow(line)
			if len(cells) == 0 {
				if gotRows > 0 {
					done = true
				}
				continue
			}
			i, isRow := rows[cells[0]]
			if !isRow {
				done = true
			} else {
				if m.Links[i] != nil {
					return nil, fmt.Errorf("line %d: second row for %s", lineNo, cells[0])
				}
				if len(cells) < 1+len(labels) {
					return nil, fmt.Errorf("line %d: row %s has %d cells, want %d devices", lineNo, cells[0], len(cells)-1, len(labels))
				}
				links := make([]Link, len(labels))
				for j := range labels {
					links[j] = Link(cells[1+j])
				}
				m.Links[i] = links
				aff := fitAffinity(cells[1+len(labels):], len(m.AffinityColumns))
				if aff == nil {
					return nil, fmt.Errorf("line %d: row %s has %d non-empty cells after the devices, header has %d affinity columns", lineNo, cells[0], nonEmpty(cells[1+len(labels):]), len(m.AffinityColumns))
				}
				for k, v := range aff {
					m.Endpoints[i].setAffinity(m.AffinityColumns[k], v)
				}
				gotRows++
				continue
			}
		}
		if mm := reNICLegend.FindStringSubmatch(line); mm != nil {
			if i, ok := rows[mm[1]]; ok {
				m.Endpoints[i].Name = mm[2]
			}
		}
	}
	if labels == nil {
		return nil, ErrNoMatrix
	}
	var missing []string
	for i, l := range labels {
		if m.Links[i] == nil {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no row for %s", ErrIncompleteMatrix, strings.Join(missing, ", "))
	}
	for i, e := range m.Endpoints {
		if e.Name == "" && !e.IsGPU() && !strings.HasPrefix(e.Label, "NIC") {
			m.Endpoints[i].Name = e.Label // old nvidia-smi: columns named after the device
		}
	}
	return m, nil
}

// parseTopoHeader recognises the header row: an empty first cell, then
// device words (GPU0, NIC0, mlx5_0), then affinity titles.
func parseTopoHeader(line string) (labels, affinity []string, ok bool) {
	if strings.TrimSpace(line) == "" || (line[0] != ' ' && line[0] != '\t') {
		return nil, nil, false
	}
	var cols []string
	if strings.Contains(line, "\t") {
		for _, c := range strings.Split(line, "\t") {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
	} else {
		for _, c := range reColumnGap.Split(strings.TrimSpace(line), -1) {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
	}
	if len(cols) == 0 || !strings.HasPrefix(cols[0], "GPU") {
		return nil, nil, false
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if len(affinity) == 0 && reDeviceWord.MatchString(c) {
			if seen[c] {
				return nil, nil, false
			}
			seen[c] = true
			labels = append(labels, c)
			continue
		}
		if strings.Contains(c, "Affinity") || strings.Contains(c, "NUMA") {
			affinity = append(affinity, c)
			continue
		}
		return nil, nil, false
	}
	return labels, affinity, len(labels) > 0
}

// splitTopoRow splits a row into cells: TAB-separated rows keep empty
// cells (trimmed); space-aligned rows split on whitespace (no cell holds a
// space). Trailing empty cells are dropped.
func splitTopoRow(line string) []string {
	var cells []string
	if strings.Contains(line, "\t") {
		for _, c := range strings.Split(line, "\t") {
			cells = append(cells, strings.TrimSpace(c))
		}
	} else {
		cells = strings.Fields(line)
	}
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return cells
}

// fitAffinity fits a row's cells after the devices to n affinity columns.
// Driver versions differ in the empty cells they print there (NIC rows, "GPU
// NUMA ID"), so surplus empty cells are dropped, last first, keeping the
// values in order; more values than columns is a broken row (nil).
func fitAffinity(aff []string, n int) []string {
	if len(aff) <= n {
		return aff
	}
	if nonEmpty(aff) > n {
		return nil
	}
	out := make([]string, 0, len(aff))
	drop := len(aff) - n
	for i := len(aff) - 1; i >= 0; i-- {
		if aff[i] == "" && drop > 0 {
			drop--
			continue
		}
		out = append(out, aff[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func nonEmpty(cells []string) int {
	n := 0
	for _, c := range cells {
		if c != "" {
			n++
		}
	}
	return n
}

// lineReader yields lines of at most max bytes; a longer line is consumed
// and reported as tooLong, so that one blob does not hide what follows.
type lineReader struct {
	br  *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (l *lineReader) next() (line string, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(buf)+len(chunk) > l.max+1 {
			tooLong = true
			buf = buf[:0]
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && (len(buf) > 0 || tooLong):
			return strings.TrimSuffix(string(buf), "\n"), tooLong, nil
		case err != nil:
			return "", false, err
		}
		return strings.TrimSuffix(string(buf), "\n"), tooLong, nil
	}
}

func (e *Endpoint) setAffinity(col, v string) {
	switch col {
	case "CPU Affinity":
		e.CPUAffinity = v
	case "NUMA Affinity":
		e.NUMAAffinity = v
	case "GPU NUMA ID":
		e.GPUNUMAID = v
	}
}

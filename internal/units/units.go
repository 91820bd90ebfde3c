// Package units formats and reads byte counts the one way erdmakit shows
// them: in the largest binary unit that divides the count exactly ("64K",
// "64KiB", "64 KiB"), in bytes otherwise. It imports only the standard
// library, so the portable parsers can use it.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// Style is how Format spells the unit.
type Style int

const (
	// Label is perftest's and nccl-tests' axis form: "64K", "1M", "2G",
	// "1000" (plots, the nccl-tests size column).
	Label Style = iota
	// Compact is the tables' form: "64KiB", "1MiB", "2B" (bw, perftest).
	Compact
	// Text is prose's form: "64 KiB", "1 MiB", "2 B" (findings, advice).
	Text
)

var binary = [...]struct {
	shift       uint
	label, unit string
}{{40, "T", "TiB"}, {30, "G", "GiB"}, {20, "M", "MiB"}, {10, "K", "KiB"}}

// Format writes n in style s.
func Format(n int64, s Style) string {
	for _, u := range binary {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return spell(n>>u.shift, u.label, u.unit, s)
		}
	}
	return spell(n, "", "B", s)
}

func spell(v int64, label, unit string, s Style) string {
	n := strconv.FormatInt(v, 10)
	switch s {
	case Label:
		return n + label
	case Compact:
		return n + unit
	}
	return n + " " + unit
}

// Parse reads a positive byte count of at most max bytes: "65536", "64K",
// "64KiB", "64 kb", "1M", "1G" (K, M, G, T are powers of 1024; case and an
// inner space do not matter). The error names the input and the limit.
func Parse(s string, max int64) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	var shift uint
	for _, u := range binary {
		if strings.HasSuffix(t, u.label) {
			shift, t = u.shift, strings.TrimSuffix(t, u.label)
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n <= 0 || n > max>>shift {
		return 0, fmt.Errorf("size %q: want a byte count like 65536, 64K or 1M (at most %s)", s, Format(max, Label))
	}
	return n << shift, nil
}

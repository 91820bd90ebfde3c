// Package benchstat holds what the lab's side-by-side benchmark programs
// (perf/internal/bwbench, perf/internal/latbench) share: per-round ratio
// statistics, their one-line form, and flag helpers.
package benchstat

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Spread is the median and quartiles of per-round ratios.
type Spread struct {
	Median float64 `json:"median"`
	P25    float64 `json:"p25"`
	P75    float64 `json:"p75"`
}

// Quartiles is v's median and quartiles (zeros for no values).
func Quartiles(v []float64) Spread {
	return Spread{Median: Quantile(v, 0.5), P25: Quantile(v, 0.25), P75: Quantile(v, 0.75)}
}

// Median is v's median (0 for no values).
func Median(v []float64) float64 { return Quantile(v, 0.5) }

// Quantile is the q-quantile of v by linear interpolation between the
// closest ranks (0 for no values); v is not changed.
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// Format is "0.998 (0.990-1.004), 20" for n rounds, or "-" without rounds.
func Format(s Spread, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f), %d", s.Median, s.P25, s.P75, n)
}

// Figure is v with prec decimals, or "-" where v is 0: a median over no
// kept runs, which a table must not show as a measured zero.
func Figure(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// IntList parses a flag's "1,16".
func IntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want positive integers, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// EnvOr is the environment variable k, or def when it is unset or empty.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// EnvInt is the environment variable k as an integer, or def.
func EnvInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

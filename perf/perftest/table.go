package perftest

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/render/table"
	"github.com/erdmakit/erdmakit/internal/units"
)

// WriteTable prints an ib_write_bw summary the way `erdmakit perftest`
// does: one row per device and size (the servers' side with serve), and
// the status line with the total. color colours the status word. The runs'
// errors are not printed (see ErrorLines).
func WriteTable(w io.Writer, rep *Summary, serve, color bool) error {
	var b strings.Builder
	t := table.New("DEVICE", "PORT", "SIZE", "ITERATIONS", "AVG_GBPS", "PEAK_GBPS", "MPPS", "ATTEMPTS")
	for _, r := range rep.Runs {
		side := r.side(serve)
		if side == nil || len(side.Results) == 0 {
			t.Add(r.Device, strconv.Itoa(r.Port), "-", "-", "-", "-", "-", strconv.Itoa(r.Attempts))
			continue
		}
		for _, x := range side.Results {
			t.Add(r.Device, strconv.Itoa(r.Port), units.Format(x.Bytes, units.Compact), strconv.FormatInt(x.Iterations, 10),
				fmt.Sprintf("%.3f", x.BWAvgGbps), fmt.Sprintf("%.3f", x.BWPeakGbps), fmt.Sprintf("%.4f", x.MsgRateMpps), strconv.Itoa(r.Attempts))
		}
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "status: %s (total %.3f Gbit/s)\n", word(rep.Status, color), rep.TotalGbps)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteLatencyTable prints an ib_write_lat summary the way `erdmakit
// perftest lat` does: one row per device and size (the servers' side with
// serve) in microseconds, and the status line with the judged median.
func WriteLatencyTable(w io.Writer, rep *LatencySummary, serve, color bool) error {
	var b strings.Builder
	t := table.New("DEVICE", "PORT", "SIZE", "ITERATIONS", "MIN_US", "TYPICAL_US", "AVG_US", "STDEV_US", "P99_US", "P99.9_US", "MAX_US", "ATTEMPTS")
	us := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, r := range rep.Runs {
		side := r.side(serve)
		if side == nil || len(side.Latency) == 0 {
			t.Add(r.Device, strconv.Itoa(r.Port), "-", "-", "-", "-", "-", "-", "-", "-", "-", strconv.Itoa(r.Attempts))
			continue
		}
		for _, x := range side.Latency {
			t.Add(r.Device, strconv.Itoa(r.Port), units.Format(x.Bytes, units.Compact), strconv.FormatInt(x.Iterations, 10), us(x.MinUS), us(x.TypicalUS),
				us(x.AvgUS), us(x.StdevUS), us(x.P99US), us(x.P999US), us(x.MaxUS), strconv.Itoa(r.Attempts))
		}
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "status: %s (median %.2f us)", word(rep.Status, color), rep.MedianUS)
	if rep.ExpectUS > 0 {
		fmt.Fprintf(&b, ", expected at most %.2f us", rep.ExpectUS)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrorLines are the runs' errors as the CLI prints them: "DEV: error" for
// a pair that failed, "DEV: PROGRAM: line" for each error either side's
// program printed.
func ErrorLines(runs []Run, program string) []string {
	var out []string
	for _, r := range runs {
		if r.Error != "" {
			out = append(out, r.Device+": "+r.Error)
		}
		for _, side := range []*Report{r.Client, r.Server} {
			if side != nil {
				for _, e := range side.Errors {
					out = append(out, r.Device+": "+program+": "+e)
				}
			}
		}
	}
	return out
}

func (r Run) side(serve bool) *Report {
	if serve {
		return r.Server
	}
	return r.Client
}

func word[S ~string](s S, color bool) string {
	if color {
		return table.Severity(string(s))
	}
	return string(s)
}

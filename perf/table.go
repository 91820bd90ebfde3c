package perf

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/render/table"
	"github.com/erdmakit/erdmakit/internal/units"
)

// WriteTable prints a bandwidth report the way `erdmakit bw` does: one row
// per device and size with its counter proof, the totals per size when
// several devices ran, and the status line. color colours the status word.
// Report.Errors are not printed (the CLI sends them to stderr).
func WriteTable(w io.Writer, rep *Report, color bool) error {
	var b strings.Builder
	t := table.New("DEVICE", "SERVER", "QPS", "SIZE", "MESSAGES", "SECONDS", "AVG_GBPS", "PEAK_GBPS", "MPPS", "COUNTER_PROOF")
	for _, r := range rep.Results {
		t.Add(r.Device, r.ServerDevice, strconv.Itoa(r.QPs), units.Format(int64(r.Size), units.Compact), strconv.FormatUint(r.Messages, 10),
			fmt.Sprintf("%.3f", r.DurationS), fmt.Sprintf("%.3f", r.AvgGbps), fmt.Sprintf("%.3f", r.PeakGbps),
			fmt.Sprintf("%.4f", r.Mpps), proofText(r.TX))
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	devs := map[string]bool{}
	for _, r := range rep.Results {
		devs[r.Device] = true
	}
	if len(devs) > 1 {
		tt := table.New("TOTAL", "DEVICES", "AVG_GBPS", "MPPS")
		for _, x := range rep.Totals {
			tt.Add(units.Format(int64(x.Size), units.Compact), strconv.Itoa(x.Devices), fmt.Sprintf("%.3f", x.AvgGbps), fmt.Sprintf("%.4f", x.Mpps))
		}
		b.WriteString("\n")
		if err := tt.Write(&b); err != nil {
			return err
		}
	}
	var expect string
	if rep.ExpectGbps > 0 {
		expect = fmt.Sprintf(" (expected at least %.1f Gbit/s in total)", rep.ExpectGbps)
	}
	b.WriteString(statusLine(string(rep.Status), color, expect))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteLatencyTable prints a latency report the way `erdmakit bw lat`
// does: one row per device and size with the statistics in microseconds,
// and the status line. Report.Errors are not printed.
func WriteLatencyTable(w io.Writer, rep *LatencyReport, color bool) error {
	var b strings.Builder
	t := table.New("DEVICE", "SERVER", "SIZE", "ITERATIONS", "MIN_US", "MEDIAN_US", "AVG_US", "STDEV_US", "P99_US", "P99.9_US", "MAX_US")
	us := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, r := range rep.Results {
		t.Add(r.Device, r.ServerDevice, units.Format(int64(r.Size), units.Compact), strconv.Itoa(r.Iterations), us(r.MinUS), us(r.MedianUS), us(r.AvgUS),
			us(r.StdevUS), us(r.P99US), us(r.P999US), us(r.MaxUS))
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	var expect string
	if rep.ExpectUS > 0 {
		expect = fmt.Sprintf(" (expected a median of at most %.2f us)", rep.ExpectUS)
	}
	b.WriteString(statusLine(string(rep.Status), color, expect))
	_, err := io.WriteString(w, b.String())
	return err
}

// statusLine is "status: WORD" and what it was judged against.
func statusLine(word string, color bool, against string) string {
	if color {
		word = table.Severity(word)
	}
	return "status: " + word + against + "\n"
}

func proofText(p *CounterProof) string {
	if p == nil {
		return "no counters"
	}
	word := "ok"
	if !p.OK {
		word = "SHORT"
	}
	return fmt.Sprintf("%s +%d %s (>= %d) %s", p.Counter, p.Delta, p.Unit, p.Want, word)
}

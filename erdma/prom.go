package erdma

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/safetext"
)

// PromRun is one doctor run as node_exporter's textfile collector shows it:
// the report, or the reason the doctor could not run, and when it ran. A
// run that could not read the host still writes a file (erdmakit_doctor_up
// 0, status 3), so the last good report is not published as current.
type PromRun struct {
	Report *Report   // nil when the doctor could not run
	Err    error     // why it could not run (with Report nil)
	Time   time.Time // when it ran; zero leaves the timestamp out
}

// WritePrometheusFile writes run as PromRun.Write does to path (e.g.
// /var/lib/node_exporter/textfile/erdmakit.prom), atomically: a temporary
// file in the same directory renamed over path, so node_exporter reads the
// old report or the new one, never a part. On error what was at path is
// left as it was.
func WritePrometheusFile(path string, run PromRun) error {
	return atomicfile.Write(path, 0o644, run.Write)
}

// Write writes the run in the Prometheus text exposition format: the
// report's metrics (WritePrometheus) and erdmakit_doctor_up 1, or only
// erdmakit_doctor_up 0 and erdmakit_doctor_status 3 when it could not run;
// then erdmakit_doctor_last_run_timestamp_seconds.
func (run PromRun) Write(w io.Writer) error {
	if run.Report != nil {
		if err := WritePrometheus(w, run.Report); err != nil {
			return err
		}
	}
	bw := bufio.NewWriter(w)
	up := 1
	if run.Report == nil {
		up = 0
		if run.Err != nil {
			// A comment for the person who opens the file; collectors skip it.
			fmt.Fprintf(bw, "# erdmakit doctor could not run: %s\n", safetext.Line(run.Err.Error()))
		}
		fmt.Fprintln(bw, "# HELP erdmakit_doctor_status "+PromHelpDoctorStatus)
		fmt.Fprintln(bw, "# TYPE erdmakit_doctor_status gauge")
		fmt.Fprintln(bw, "erdmakit_doctor_status 3")
	}
	fmt.Fprintln(bw, "# HELP erdmakit_doctor_up "+PromHelpDoctorUp)
	fmt.Fprintln(bw, "# TYPE erdmakit_doctor_up gauge")
	fmt.Fprintf(bw, "erdmakit_doctor_up %d\n", up)
	if !run.Time.IsZero() {
		fmt.Fprintln(bw, "# HELP erdmakit_doctor_last_run_timestamp_seconds "+PromHelpDoctorLastRun)
		fmt.Fprintln(bw, "# TYPE erdmakit_doctor_last_run_timestamp_seconds gauge")
		fmt.Fprintf(bw, "erdmakit_doctor_last_run_timestamp_seconds %s\n",
			strconv.FormatFloat(float64(run.Time.UnixMilli())/1e3, 'f', -1, 64))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing prometheus text: %w", err)
	}
	return nil
}

// HELP texts of the metrics the doctor writes; monitor's exporter uses the
// same ones for the metrics both emit, so a dashboard reads one meaning.
const (
	PromHelpDoctorCheck    = "Result of one erdmakit doctor check: 0 ok, 1 warn, 2 fail, -1 skip."
	PromHelpDoctorStatus   = "Overall erdmakit doctor status, the worst check: 0 ok, 1 warn, 2 fail; 3 the doctor could not run."
	PromHelpDoctorUp       = "1 when the doctor read the host and judged it, 0 when it could not run (its checks are then absent)."
	PromHelpDoctorLastRun  = "When the doctor last ran (Unix time), whether or not it could read the host."
	PromHelpDoctorInfo     = "Host the doctor ran on; always 1."
	PromHelpLimitDropTotal = "eRDMA rate-limit drop counter (hw_counters/*_limit_drop_cnt) as read by the doctor."
)

// PromValue is the gauge value of a severity in the Prometheus output:
// 0 ok, 1 warn, 2 fail, -1 skip.
func PromValue(s health.Severity) int {
	switch s {
	case health.OK:
		return 0
	case health.Warn:
		return 1
	case health.Fail:
		return 2
	}
	return -1
}

// WritePrometheus writes r in the Prometheus text exposition format, for
// node_exporter's textfile collector:
//
//	erdmakit_doctor_check{id="port-active"} 0      (0 ok, 1 warn, 2 fail, -1 skip)
//	erdmakit_doctor_status 0                       (0 ok, 1 warn, 2 fail)
//	erdmakit_doctor_info{instance_type="...",family="..."} 1
//	erdmakit_erdma_limit_drop_total{device="erdma_0",port="1",counter="hw_bps_limit_drop_cnt"} 0
//
// For the collector's directory use WritePrometheusFile, which never shows
// it half a file and adds erdmakit_doctor_up and the run's time (PromRun).
func WritePrometheus(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# HELP erdmakit_doctor_check "+PromHelpDoctorCheck)
	fmt.Fprintln(bw, "# TYPE erdmakit_doctor_check gauge")
	seen := map[string]bool{}
	for _, f := range r.Findings {
		if seen[f.ID] {
			continue // one sample per id: a duplicate would make the file invalid
		}
		seen[f.ID] = true
		fmt.Fprintf(bw, "erdmakit_doctor_check{id=%s} %d\n", promQuote(f.ID), PromValue(f.Severity))
	}
	fmt.Fprintln(bw, "# HELP erdmakit_doctor_status "+PromHelpDoctorStatus)
	fmt.Fprintln(bw, "# TYPE erdmakit_doctor_status gauge")
	st := PromValue(r.Status)
	if st < 0 {
		st = 0
	}
	fmt.Fprintf(bw, "erdmakit_doctor_status %d\n", st)
	if h := r.Host; h != nil {
		typ, family := "", ""
		if h.Instance != nil {
			typ = h.Instance.Type
		}
		if h.Profile != nil {
			family = h.Profile.Family
		}
		fmt.Fprintln(bw, "# HELP erdmakit_doctor_info "+PromHelpDoctorInfo)
		fmt.Fprintln(bw, "# TYPE erdmakit_doctor_info gauge")
		fmt.Fprintf(bw, "erdmakit_doctor_info{instance_type=%s,family=%s,kernel=%s} 1\n", promQuote(typ), promQuote(family), promQuote(h.Kernel))
		first := true
		for _, dev := range h.Devices {
			if !dev.ERDMA {
				continue
			}
			for _, p := range dev.Ports {
				names := make([]string, 0, len(p.Counters))
				for n := range p.Counters {
					if IsLimitDrop(n) {
						names = append(names, n)
					}
				}
				sort.Strings(names)
				for _, n := range names {
					if first {
						fmt.Fprintln(bw, "# HELP erdmakit_erdma_limit_drop_total "+PromHelpLimitDropTotal)
						fmt.Fprintln(bw, "# TYPE erdmakit_erdma_limit_drop_total counter")
						first = false
					}
					fmt.Fprintf(bw, "erdmakit_erdma_limit_drop_total{device=%s,port=\"%d\",counter=%s} %d\n",
						promQuote(dev.Name), p.Number, promQuote(n), p.Counters[n])
				}
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing prometheus text: %w", err)
	}
	return nil
}

// promQuote quotes a label value: backslash, double quote and newline are
// escaped as the exposition format requires.
func promQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

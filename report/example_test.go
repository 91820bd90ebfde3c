package report_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/report"
)

// A page from a result value (as `fleet prove --report` writes it) and
// from a command's --json output (as `erdmakit report FILE.json` reads it).
func ExampleWrite() {
	doc := &erdma.Report{Status: health.Fail, Findings: []health.Finding{{
		ID: "gdr-peermem", Severity: health.Fail, Summary: "GPUDirect RDMA not ready",
		Evidence: []string{"sys/module/nvidia_peermem: absent"}, Remediation: "modprobe nvidia_peermem",
	}}}
	a, err := report.FromValue("gpu001 doctor", doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := report.FromJSON("lat.json", []byte(`{"status":"ok","results":[]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Kind, b.Kind)
	var page bytes.Buffer
	if err := report.Write(&page, report.Options{Title: "gpu001"}, a, b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(page.String(), "FAIL: 1 failing"), strings.Contains(page.String(), "modprobe nvidia_peermem"))
	_, err = report.FromJSON("notes.json", []byte(`{"hello":"world"}`))
	fmt.Println(err)
	// Output:
	// doctor bw-lat
	// true true
	// notes.json: top-level keys [hello] match no erdmakit --json result: not an erdmakit result this report knows
}

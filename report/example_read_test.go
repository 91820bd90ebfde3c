package report_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/erdmakit/erdmakit/report"
)

// What `erdmakit report FILE...` does with its arguments: every input
// read within one bound for all of them together ("-" is stdin), each
// stamped with its file's time, so that where two inputs judge the same
// host the page shows the newer.
func ExampleReadFiles() {
	dir, err := os.MkdirTemp("", "report-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	lat := filepath.Join(dir, "lat.json")
	if err := os.WriteFile(lat, []byte(`{"status":"ok","results":[]}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	ins, err := report.ReadFiles(context.Background(), strings.NewReader(`{"status":"ok","results":[]}`), lat, "-")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(ins), ins[0].Kind, ins[1].Name, !ins[0].Time.IsZero(), ins[1].Time.IsZero())

	// Inputs larger than one page reads together are refused before any is read.
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.Truncate(big, report.MaxTotalBytes+1); err != nil {
		fmt.Println(err)
		return
	}
	_, err = report.ReadFiles(context.Background(), nil, lat, big)
	fmt.Println(errors.Is(err, report.ErrTooLarge))
	// Output:
	// 2 bw-lat stdin true true
	// true
}

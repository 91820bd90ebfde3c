package health_test

import (
	"fmt"
	"os"

	"github.com/erdmakit/erdmakit/health"
)

func ExampleStatus() {
	fs := []health.Finding{
		{ID: "port-active", Severity: health.OK},
		{ID: "network-card-channel", Severity: health.Skip},
		{ID: "mtu", Severity: health.Warn},
	}
	st := health.Status(fs)
	fmt.Println(st, st.Exit())
	// Output: warn 1
}

// WriteTable prints findings as `erdmakit doctor` and `erdmakit nccl run`
// do: the table, then the evidence and fix of each problem.
func ExampleWriteTable() {
	fs := []health.Finding{
		{ID: "port-active", Severity: health.OK, Summary: "every eRDMA port is ACTIVE"},
		{ID: "memlock", Severity: health.Fail, Summary: "memlock 64 KiB", Evidence: []string{"RLIMIT_MEMLOCK soft 64 KiB"},
			Remediation: "ulimit -l unlimited"},
	}
	_ = health.WriteTable(os.Stdout, fs, health.TableOptions{})
	// Output:
	// RESULT  CHECK        SUMMARY
	// ok      port-active  every eRDMA port is ACTIVE
	// fail    memlock      memlock 64 KiB
	//
	// fail memlock: memlock 64 KiB
	//     read: RLIMIT_MEMLOCK soft 64 KiB
	//     fix:  ulimit -l unlimited
}

package health_test

import (
	"errors"
	"fmt"

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

// ExitCode is the exit code a check program ends with: the Nagios
// convention erdmakit's CLI follows, 3 when the check could not run.
func ExampleExitCode() {
	fs := []health.Finding{{ID: "mtu", Severity: health.Fail}}
	fmt.Println(health.ExitCode(health.Status(fs), nil))
	fmt.Println(health.ExitCode(health.OK, errors.New("reading /sys: permission denied")))
	// Output:
	// 2
	// 3
}

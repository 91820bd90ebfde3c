package health_test

import (
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

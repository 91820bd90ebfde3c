package perftest_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/perf/perftest"
)

// The eRDMA guide's recipe for two devices: one server/client pair each, on
// distinct ports. Args is what RunWriteBW runs.
func ExampleOptions_Args() {
	o := perftest.Options{QPs: 16, Duration: 10 * time.Second, GIDIndex: -1}
	for i, dev := range []string{"erdma_0", "erdma_1"} {
		port := perftest.DefaultPort + i
		fmt.Println("server: ib_write_bw", strings.Join(o.Args(dev, port, ""), " "))
		fmt.Println("client: ib_write_bw", strings.Join(o.Args(dev, port, "10.0.0.1"), " "))
	}
	// Output:
	// server: ib_write_bw -d erdma_0 -F --report_gbits -p 18515 -q 16 -D 10
	// client: ib_write_bw -d erdma_0 -F --report_gbits -p 18515 -q 16 -D 10 10.0.0.1
	// server: ib_write_bw -d erdma_1 -F --report_gbits -p 18516 -q 16 -D 10
	// client: ib_write_bw -d erdma_1 -F --report_gbits -p 18516 -q 16 -D 10 10.0.0.1
}

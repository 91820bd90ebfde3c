package erdma

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promLine is one sample line of the text exposition format.
var promLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? -?[0-9]+(\.[0-9]+)?$`)

func TestWritePrometheus(t *testing.T) {
	inv := handHealthy()
	inv.Devices[0].Ports[0].Counters["hw_bps_limit_drop_cnt"] = 7
	testNetdev(inv, "eth2").MTU = 1500
	r := Diagnose(context.Background(), inv, DoctorOptions{})
	var b bytes.Buffer
	require.NoError(t, WritePrometheus(&b, r))
	out := b.String()
	assert.Contains(t, out, "# TYPE erdmakit_doctor_check gauge\n")
	assert.Contains(t, out, `erdmakit_doctor_check{id="port-active"} 0`+"\n")
	assert.Contains(t, out, `erdmakit_doctor_check{id="mtu"} 2`+"\n")
	assert.Contains(t, out, `erdmakit_doctor_check{id="rate-limit-drops"} -1`+"\n")
	assert.Contains(t, out, "erdmakit_doctor_status 2\n")
	assert.Contains(t, out, `erdmakit_doctor_info{instance_type="ecs.ebmgn8is.32xlarge",family="ebmgn8is",kernel="5.10.134-16.al8.x86_64"} 1`)
	assert.Contains(t, out, `erdmakit_erdma_limit_drop_total{device="erdma_0",port="1",counter="hw_bps_limit_drop_cnt"} 7`)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(l, "# ") {
			assert.Regexp(t, `^# (HELP|TYPE) erdmakit_[a-z_]+ `, l)
			continue
		}
		assert.Regexp(t, promLine, l)
	}
	assert.Equal(t, len(Checks()), strings.Count(out, "erdmakit_doctor_check{"))
}

func TestPromQuote(t *testing.T) {
	assert.Equal(t, `"a\\b\"c\nd"`, promQuote("a\\b\"c\nd"))
	var b bytes.Buffer
	r := &Report{Status: health.Warn, Host: &Inventory{Kernel: "6.1 \"x\"\n"}}
	require.NoError(t, WritePrometheus(&b, r))
	assert.Contains(t, b.String(), `kernel="6.1 \"x\"\n"} 1`)
	assert.Contains(t, b.String(), "erdmakit_doctor_status 1\n")
}

func TestPromValue(t *testing.T) {
	assert.Equal(t, 0, PromValue(health.OK))
	assert.Equal(t, 1, PromValue(health.Warn))
	assert.Equal(t, 2, PromValue(health.Fail))
	assert.Equal(t, -1, PromValue(health.Skip))
}

// TestPromRunCouldNotRun: a doctor that could not run still writes a file
// that says so (hardening-3 item 15), with the reason as one comment line.
func TestPromRunCouldNotRun(t *testing.T) {
	var b strings.Builder
	at := time.Unix(1796400000, 500e6)
	run := PromRun{Err: errors.New("open /x: no such file\nerdmakit_doctor_status 0"), Time: at}
	require.NoError(t, run.Write(&b))
	assert.Equal(t, `# erdmakit doctor could not run: open /x: no such file\nerdmakit_doctor_status 0
# HELP erdmakit_doctor_status `+PromHelpDoctorStatus+`
# TYPE erdmakit_doctor_status gauge
erdmakit_doctor_status 3
# HELP erdmakit_doctor_up `+PromHelpDoctorUp+`
# TYPE erdmakit_doctor_up gauge
erdmakit_doctor_up 0
# HELP erdmakit_doctor_last_run_timestamp_seconds `+PromHelpDoctorLastRun+`
# TYPE erdmakit_doctor_last_run_timestamp_seconds gauge
erdmakit_doctor_last_run_timestamp_seconds 1796400000.5
`, b.String())
}

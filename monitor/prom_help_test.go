package monitor

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestPromHelpMatchesDoctor: a metric that both `doctor --format prom` and
// the exporter emit has one HELP text, so a dashboard means one thing by it.
func TestPromHelpMatchesDoctor(t *testing.T) {
	snap := testSnapshot()
	snap.Report.Host = &erdma.Inventory{Kernel: "6.1", Devices: snap.Inventory.Devices}
	var sb strings.Builder
	require.NoError(t, erdma.WritePrometheus(&sb, snap.Report))
	doctor := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(sb.String()))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# HELP "); ok {
			name, help, _ := strings.Cut(rest, " ")
			doctor[name] = help
		}
	}
	require.Contains(t, doctor, "erdmakit_doctor_check")

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(func(context.Context) (*Snapshot, error) { return snap, nil }, time.Second))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	shared := 0
	for _, mf := range mfs {
		want, ok := doctor[mf.GetName()]
		if !ok {
			continue
		}
		shared++
		require.Equal(t, want, mf.GetHelp(), "HELP of %s", mf.GetName())
	}
	require.GreaterOrEqual(t, shared, 2, "doctor_check and doctor_status are emitted by both")
}

package moduletest

import (
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackageGraph pins what a package may pull into an importer's build
// (library-2 items 6 and 7): the ECS API client does not drag in the
// doctor, verbs (cgo's shim) or NVML; the doctor does not drive verbs
// itself (its probe is injected: doctor/verbsprobe, which the CLI links);
// no domain package imports the doctor; the doctor does not pull in the
// Prometheus exporter's dependencies.
func TestPackageGraph(t *testing.T) {
	root, err := fixture.ModuleRoot()
	require.NoError(t, err)
	deps := func(pkg string) []string {
		list := execx.Command(t.Context(), "go", "list", "-deps", pkg)
		list.Dir = root
		out, err := list.Output()
		require.NoError(t, err, "go list -deps %s", pkg)
		return strings.Fields(string(out))
	}
	forbidden := map[string][]string{
		"./eri": {modulePath + "/doctor", modulePath + "/ibverbs", "github.com/NVIDIA/go-nvml"},
		// The exporter's client (Prometheus, protobuf) stays the exporter's:
		// doctor.Snapshot is a monitor.SnapshotFunc without package monitor
		// (library-3 item 5).
		"./doctor": {modulePath + "/ibverbs", modulePath + "/monitor", "github.com/prometheus/", "google.golang.org/protobuf"},
	}
	for _, pkg := range []string{"./erdma", "./nvml", "./ibverbs", "./nccl", "./perf", "./fleet", "./monitor", "./plot", "./report", "./report/live"} {
		forbidden[pkg] = append(forbidden[pkg], modulePath+"/doctor")
	}
	// The live commands' tables (NVML, the ECS API, Prometheus) stay out of
	// report, which renders results on a laptop.
	forbidden["./report"] = append(forbidden["./report"], modulePath+"/report/live")
	// Kubernetes stays the kube package's: no other library package pulls
	// it in, and it pulls in neither the doctor nor verbs, NVML or the
	// exporter (nor client-go: its own small REST client).
	for _, pkg := range []string{"./erdma", "./nvml", "./ibverbs", "./nccl", "./perf", "./fleet", "./monitor", "./plot", "./report",
		"./doctor", "./eri", "./setup", "./health", "./gid", "./connect", "./version"} {
		forbidden[pkg] = append(forbidden[pkg], modulePath+"/kube")
	}
	forbidden["./kube"] = []string{modulePath + "/doctor", modulePath + "/ibverbs", modulePath + "/monitor", modulePath + "/fleet",
		"github.com/NVIDIA/go-nvml", "github.com/prometheus/", "k8s.io/", "sigs.k8s.io/"}
	for pkg, bad := range forbidden {
		for _, d := range deps(pkg) {
			for _, b := range bad {
				assert.False(t, d == b || strings.HasPrefix(d, b+"/"), "%s depends on %s", pkg, d)
			}
		}
	}
	// report shows a setup run as setupresult's plain data (setup.Result is
	// setupresult.Result), never through setup, eri or nvml themselves
	// (library-3, Shape): report stays light and portable.
	for _, pkg := range []string{"./report", "./setup/setupresult"} {
		for _, d := range deps(pkg) {
			assert.NotContains(t, []string{modulePath + "/setup", modulePath + "/eri", modulePath + "/nvml", modulePath + "/doctor"}, d, "%s depends on %s", pkg, d)
		}
	}
	assert.Contains(t, deps("./examples/erdmakit"), modulePath+"/doctor/verbsprobe", "the CLI runs the doctor with the live verbs probe")
	assert.Contains(t, deps("./examples/erdmakit"), modulePath+"/kube", "the CLI wires the node agent and fleet prove's Indexed Job")
}

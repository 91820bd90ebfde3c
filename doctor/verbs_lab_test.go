//go:build lab && linux && cgo

package doctor_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/doctor/verbsprobe"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/lab/labtest"
	"github.com/erdmakit/erdmakit/nvml"
)

const verbsLabHiddenEnv = "ERDMAKIT_VERBS_LAB_HIDDEN"

// TestLabVerbsCheck: on Soft-RoCE with rdma-core's rxe provider the check
// is ok and names rxe0's port; with /etc/libibverbs.d hidden (a private
// mount namespace of a re-executed child) sysfs still shows rxe0 but
// libibverbs lists nothing, and the check fails naming the provider file.
func TestLabVerbsCheck(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	if os.Getenv(verbsLabHiddenEnv) == "1" {
		require.NoError(t, syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""))
		empty := t.TempDir()
		require.NoError(t, syscall.Mount(empty, "/etc/libibverbs.d", "", syscall.MS_BIND, ""))
		t.Cleanup(func() { _ = syscall.Unmount("/etc/libibverbs.d", 0) })
		f := liveVerbsFinding(t)
		assert.Equal(t, health.Fail, f.Severity, f.Summary)
		assert.Contains(t, f.Summary, "libibverbs does not list "+dev)
		assert.Contains(t, strings.Join(f.Evidence, "\n"), "/etc/libibverbs.d/rxe.driver: missing")
		assert.Contains(t, f.Remediation, "ibverbs-providers")
		return
	}
	f := liveVerbsFinding(t)
	assert.Equal(t, health.OK, f.Severity, "%s %v", f.Summary, f.Evidence)
	assert.Contains(t, f.Summary, dev+" port 1 PORT_ACTIVE")

	labtest.RerunInMountNamespace(t, "TestLabVerbsCheck", verbsLabHiddenEnv, 2*time.Minute)
}

// TestLabProbeDMABUF: the doctor's DMA-BUF probe (verbsprobe.Live) on rxe0 (rdma-core's rxe
// provider has no reg_dmabuf_mr, like erdma's) answers EOPNOTSUPP, nvml's
// rule takes that answer over its provider table, and the recorded form
// replays it.
func TestLabProbeDMABUF(t *testing.T) {
	labtest.Require(t)
	dev := labtest.Device()
	got := verbsprobe.Live{}.ProbeDMABUF(t.Context(), []string{dev, "no-such-device"})
	require.Equal(t, []nvml.ProbeResult{{Device: dev, Supported: false, Result: "EOPNOTSUPP"}}, got)

	d := nvml.ReadDMABUF(t.Context(), "/", got...)
	var p *nvml.RDMAProvider
	for i := range d.Providers {
		if d.Providers[i].Device == dev {
			p = &d.Providers[i]
		}
	}
	require.NotNil(t, p, "%+v", d.Providers)
	assert.Equal(t, nvml.SupportNo, p.DMABUF)
	assert.Equal(t, "probe", p.Source)
	assert.Contains(t, p.Reason, "-> EOPNOTSUPP (live probe)")
	assert.Equal(t, nvml.SupportNo, d.Supported)

	h, closer, err := erdma.OpenHost(t.Context(), "/")
	require.NoError(t, err)
	defer closer.Close()
	files, err := doctor.DMABUFRecordFiles(t.Context(), h, verbsprobe.Live{})
	require.NoError(t, err)
	assert.Contains(t, string(files[nvml.DMABUFProbePath]), `"result": "EOPNOTSUPP"`)
}

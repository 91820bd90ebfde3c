package doctor_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

func TestInstanceFromMetadata(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			w.Write([]byte("tok"))
			return
		}
		w.Write([]byte(map[string]string{
			"/latest/meta-data/instance-id":            "i-bp1test",
			"/latest/meta-data/instance/instance-type": "ecs.ebmgn9gc.64xlarge",
			"/latest/meta-data/region-id":              "cn-beijing",
		}[r.URL.Path]))
	}))
	defer srv.Close()
	inst, err := doctor.Instance(t.Context(), erdma.LiveHost(), doctor.Options{Metadata: &erdma.MetadataClient{BaseURL: srv.URL}})
	require.NoError(t, err)
	assert.Equal(t, "ecs.ebmgn9gc.64xlarge", inst.Type)

	_, err = doctor.Instance(t.Context(), erdma.LiveHost(), doctor.Options{})
	assert.ErrorContains(t, err, "not asked")
	assert.NotContains(t, err.Error(), "--", "library errors name no CLI flag")

	srv.Close()
	_, err = doctor.Instance(t.Context(), erdma.LiveHost(), doctor.Options{Metadata: &erdma.MetadataClient{BaseURL: srv.URL}})
	assert.ErrorIs(t, err, erdma.ErrMetadataUnavailable)
}

func TestInstanceOverrideWins(t *testing.T) {
	inst, err := doctor.Instance(t.Context(), erdma.RecordedHost(hostDir(t, "ebmgn8is-healthy")), doctor.Options{InstanceType: "ecs.gn8is-2x.8xlarge"})
	require.NoError(t, err)
	assert.Equal(t, &erdma.Instance{Type: "ecs.gn8is-2x.8xlarge", Source: "flag"}, inst)
}

func TestInstanceRecordedWithout(t *testing.T) {
	inst, err := doctor.Instance(t.Context(), erdma.RecordedHost(t.TempDir()), doctor.Options{})
	assert.Nil(t, inst)
	assert.ErrorContains(t, err, erdma.RecordedInstanceFile)
}

func TestRunRejectsBadOptions(t *testing.T) {
	h := erdma.RecordedHost(hostDir(t, "ebmgn8is-healthy"))
	for name, opt := range map[string]doctor.Options{
		"negative interval": {Interval: -1},
		"bad instance type": {InstanceType: "ebmgn8is"},
		"check without run": {Checks: []doctor.Check{{ID: "x"}}},
		"after unknown":     {Checks: []doctor.Check{{ID: "x", After: "nope", Run: okCheck}}},
		"contributed twice": {Checks: []doctor.Check{{ID: "x", Run: okCheck}, {ID: "x", Run: okCheck}}},
	} {
		_, err := doctor.Run(t.Context(), h, opt)
		assert.ErrorIs(t, err, doctor.ErrOptions, name)
	}
}

func TestChecksPlacement(t *testing.T) {
	base, err := doctor.Checks()
	require.NoError(t, err)
	ids := func(cs []erdma.Check) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	assert.Equal(t, []string{"host-read", "instance-profile", "erdma-devices", "network-card-channel", "erdma-driver", "eadm",
		"uverbs", "verbs", "gpu-driver", "gdr-peermem", "gpu-count", "gpu-nic-distance", "netdev-ip", "port-active", "transport-mode",
		"gid-index", "mtu", "memlock", "rate-limit-drops"}, ids(base), "the guide's order, docs/doctor.md's table")

	cs, err := doctor.Checks(
		doctor.Check{ID: "verbs-userspace", After: erdma.FindingUVerbs, Run: okCheck},
		doctor.Check{ID: erdma.FindingGDRPeermem, Title: "GPUDirect RDMA through peermem or DMA-BUF", Run: okCheck},
		doctor.Check{ID: "last", Run: okCheck})
	require.NoError(t, err)
	got := ids(cs)
	require.Len(t, got, len(base)+2)
	assert.Equal(t, "verbs-userspace", got[7], "right after uverbs")
	assert.Equal(t, "gdr-peermem", got[10], "a built-in id is replaced in place, once")
	assert.Equal(t, "GPUDirect RDMA through peermem or DMA-BUF", cs[10].Title)
	assert.Equal(t, "last", got[len(got)-1])

	// The replacement is what runs.
	rep, err := doctor.Run(t.Context(), erdma.RecordedHost(hostDir(t, "no-peermem")), doctor.Options{
		Checks: []doctor.Check{{ID: erdma.FindingGDRPeermem, Run: okCheck}}})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		if f.ID == erdma.FindingGDRPeermem {
			assert.Equal(t, "fine", f.Summary)
		}
	}
	assert.Equal(t, health.OK, rep.Status, "the built-in peermem failure is gone")
}

func TestCheckPanicIsAFinding(t *testing.T) {
	rep, err := doctor.Run(t.Context(), erdma.RecordedHost(hostDir(t, "ebmgn8is-healthy")), doctor.Options{
		Checks: []doctor.Check{{ID: "buggy", Run: func(context.Context, *doctor.Input) health.Finding { panic("boom") }}}})
	require.NoError(t, err)
	last := rep.Findings[len(rep.Findings)-1]
	assert.Equal(t, "buggy", last.ID)
	assert.Equal(t, health.Warn, last.Severity)
	assert.Contains(t, last.Summary, "internal error in check buggy: boom")
}

package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
)

// TestOneAnswerPerQuestion runs every fixture host through the doctor,
// `nccl env`, nccl.AdviseEnv and the GID choice: they give the same NCCL
// GDR level (erdma.DecideGDRLevel) and the same GID index.
func TestOneAnswerPerQuestion(t *testing.T) {
	for _, name := range fixtureHosts(t) {
		t.Run(name, func(t *testing.T) {
			h, closer, err := erdma.OpenHost(t.Context(), hostDir(name))
			require.NoError(t, err)
			defer closer.Close()
			rep, err := doctor.Run(t.Context(), h, doctor.DefaultOptions())
			require.NoError(t, err)
			byID := map[string]health.Finding{}
			for _, f := range rep.Findings {
				byID[f.ID] = f
			}
			lvl := erdma.DecideGDRLevel(rep.Host.GPU)
			ready := rep.Host.GPU != nil && rep.Host.GPU.GDRPath != ""
			adv := nccl.AdviseEnv(rep.Host, nccl.EnvOptions{})
			_, cli, _ := runCLI("nccl", "env", "--root", hostDir(name))
			_, hasERDMA := adv.Get("NCCL_IB_HCA") // devices NCCL can use

			// GDR level: the doctor's findings, AdviseEnv and `nccl env`.
			env, set := adv.Get("NCCL_NET_GDR_LEVEL")
			if hasERDMA && ready && lvl.Level != "" {
				assert.Equal(t, lvl.Level, env, "AdviseEnv")
				assert.Contains(t, cli, "export NCCL_NET_GDR_LEVEL="+lvl.Level+"\n", "nccl env")
				assert.Contains(t, byID[erdma.FindingGDRPeermem].Summary, "NCCL_NET_GDR_LEVEL="+lvl.Level, "gdr-peermem")
			} else if hasERDMA && ready {
				assert.False(t, set, "AdviseEnv sets %s although PXB covers every GPU", env)
				assert.NotContains(t, cli, "NCCL_NET_GDR_LEVEL=", "nccl env")
			}
			if set {
				assert.Equal(t, lvl.Level, env)
				assert.Contains(t, cli, "export NCCL_NET_GDR_LEVEL="+env+"\n")
				// A word NCCL accepts (src/graph/paths.cc ncclGetLevel
				// against topoPathTypeStr), never nvidia-smi's NODE.
				assert.Contains(t, smitopo.NCCLPathTypes(), env)
			}
			assert.NotContains(t, cli, "NCCL_NET_GDR_LEVEL=NODE")
			if d := byID[nvml.FindingGPUDistance]; strings.Contains(d.Remediation, "NCCL_NET_GDR_LEVEL=") {
				assert.True(t, strings.HasSuffix(d.Remediation, "NCCL_NET_GDR_LEVEL="+lvl.Level), "gpu-nic-distance: %s", d.Remediation)
			}
			for _, f := range rep.Findings {
				for _, s := range append([]string{f.Summary, f.Remediation}, f.Evidence...) {
					if i := strings.Index(s, "NCCL_NET_GDR_LEVEL="); i >= 0 && f.ID != nvml.FindingGPUDistance {
						assert.True(t, strings.HasPrefix(s[i:], "NCCL_NET_GDR_LEVEL="+lvl.Level), "%s: %s", f.ID, s)
					}
				}
			}

			// GID: the doctor's gid-index, AdviseEnv and `nccl env` name the
			// index the inventory recommends.
			idx := map[int]bool{}
			for _, d := range rep.Host.Devices {
				for _, p := range d.Ports {
					if d.ERDMA && p.RecommendedGIDIndex >= 0 {
						idx[p.RecommendedGIDIndex] = true
					}
				}
			}
			if gid, ok := adv.Get("NCCL_IB_GID_INDEX"); ok {
				want := "-1"
				for i := range idx {
					if len(idx) == 1 {
						want = strconv.Itoa(i)
					}
				}
				assert.Equal(t, want, gid, "AdviseEnv")
				assert.Contains(t, cli, "export NCCL_IB_GID_INDEX="+gid+"\n", "nccl env")
				if g := byID[erdma.FindingGIDIndex]; g.Severity == health.OK {
					assert.Contains(t, g.Summary, "NCCL_IB_GID_INDEX="+gid, "gid-index")
				}
			}
		})
	}
}

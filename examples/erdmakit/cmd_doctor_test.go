package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoctorExitCodes(t *testing.T) {
	for _, tc := range []struct {
		host string
		code int
	}{
		{"ebmgn8is-healthy", ExitOK},
		{"gn8is-single", ExitOK},
		{"iwarp-mode", ExitWarn},
		{"port-down-no-ip", ExitFail},
		{"no-erdma-driver", ExitFail},
		{"no-peermem", ExitFail},
		{"memlock-64k", ExitFail},
		{"mtu-mismatch", ExitFail},
	} {
		t.Run(tc.host, func(t *testing.T) {
			code, out, stderr := runCLI("doctor", "--root", hostDir(tc.host))
			assert.Equal(t, tc.code, code, "%s\n%s", out, stderr)
			assert.Contains(t, out, "RESULT  CHECK")
		})
	}
}

func TestDoctorTable(t *testing.T) {
	code, out, _ := runCLI("doctor", "--root", hostDir("mtu-mismatch"))
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "instance type ecs.ebmgn8is.32xlarge (recorded)")
	assert.Regexp(t, `fail +mtu +ERI MTUs disagree`, out)
	assert.Contains(t, out, "\nfail mtu: ERI MTUs disagree")
	assert.Contains(t, out, "    fix:  ip link set eth1 mtu 8500")
	assert.Contains(t, out, "status: fail (")
	assert.Contains(t, out, "first step: mtu: ")
	assert.NotContains(t, out, "\x1b[", "no colour when not a terminal")

	// -v shows the evidence of every finding.
	_, out, _ = runCLI("doctor", "-v", "--root", hostDir("ebmgn8is-healthy"))
	assert.Contains(t, out, "ok gid-index: ")
	assert.Contains(t, out, "    read: ")
}

func TestDoctorNoERDMAHost(t *testing.T) {
	// What `make run` shows on a machine without eRDMA.
	code, out, _ := runCLI("doctor", "--root", hostDir("no-erdma-driver"))
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "no eRDMA device on this host")
	assert.Contains(t, out, "first step: erdma-devices: attach an ERI")
	assert.Contains(t, out, "env_setup.sh --egs")
}

func TestDoctorJSON(t *testing.T) {
	code, out, stderr := runCLI("doctor", "--json", "--root", hostDir("port-down-no-ip"))
	require.Equal(t, ExitFail, code, stderr)
	var rep erdma.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, health.Fail, rep.Status)
	// Every check of the erdma doctor, plus the nvml package's GPU count and
	// GPU<->eRDMA distance checks (the fixture has GPUs), after gdr-peermem.
	checks, err := doctor.Checks()
	require.NoError(t, err)
	require.Len(t, rep.Findings, len(checks))
	ids := make([]string, len(rep.Findings))
	for i, f := range rep.Findings {
		ids[i] = f.ID
	}
	at := slices.Index(ids, "gdr-peermem")
	require.GreaterOrEqual(t, at, 0)
	assert.Equal(t, []string{"gpu-count", "gpu-nic-distance"}, ids[at+1:at+3])
	require.NotNil(t, rep.Host)
	require.NotNil(t, rep.Host.GPU, "the doctor fills the GPU facts through NVML")
	assert.Equal(t, 8, rep.Host.GPU.Count)
	assert.Equal(t, "ecs.ebmgn8is.32xlarge", rep.Host.Instance.Type)

	code2, out2, _ := runCLI("doctor", "--format", "json", "--root", hostDir("port-down-no-ip"))
	assert.Equal(t, code, code2)
	assert.JSONEq(t, out, out2)
}

func TestDoctorProm(t *testing.T) {
	code, out, _ := runCLI("doctor", "--format", "prom", "--root", hostDir("memlock-64k"))
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, `erdmakit_doctor_check{id="memlock"} 2`)
	assert.Contains(t, out, `erdmakit_doctor_check{id="port-active"} 0`)
	assert.Contains(t, out, "erdmakit_doctor_status 2\n")
}

func TestDoctorInstanceTypeFlag(t *testing.T) {
	// gn8is-2x has 1 ERI and 2 GPUs (section 10): the healthy 2-ERI, 8-GPU host is more than the type has.
	code, out, _ := runCLI("doctor", "--json", "--instance-type", "ecs.gn8is-2x.8xlarge", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, ExitFail, code)
	var rep erdma.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	for _, f := range rep.Findings {
		switch f.ID {
		case "erdma-devices":
			assert.Equal(t, health.Warn, f.Severity, f.Summary)
		case "gpu-count":
			assert.Equal(t, health.Fail, f.Severity, f.Summary)
		}
	}
	assert.Equal(t, 2, rep.Host.Profile.GPUs)
	assert.Equal(t, "flag", rep.Host.Instance.Source)
	assert.Equal(t, "gn8is-2x", rep.Host.Profile.Family)
}

func TestDoctorBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "--instance-type", "ebmgn8is", "--root", hostDir("ebmgn8is-healthy")},
		{"doctor", "--format", "xml", "--root", hostDir("ebmgn8is-healthy")},
		{"doctor", "--json", "--format", "prom", "--root", hostDir("ebmgn8is-healthy")},
		{"doctor", "--interval", "-1s"},
		{"doctor", "--root", "/nonexistent/host"},
		{"doctor", "extra-arg"},
	} {
		code, _, stderr := runCLI(args...)
		assert.Equal(t, ExitUnknown, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
}

func TestDoctorLiveHost(t *testing.T) {
	// `make run`: the doctor on this machine, whatever it has. It must run
	// to the end and exit with a health code, not "could not run".
	code, out, stderr := runCLI("doctor", "--no-metadata", "--interval", "10ms")
	assert.Contains(t, []int{ExitOK, ExitWarn, ExitFail}, code, stderr)
	assert.Contains(t, out, "RESULT  CHECK")
	assert.Contains(t, out, "status: ")
}

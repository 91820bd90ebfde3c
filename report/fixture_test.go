package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/stretchr/testify/require"
)

// slowPairs is a fake PairTester: every pair at 100 Gbit/s but those with
// a slow host (30) or a dead host (an error), and one slow link.
type slowPairs struct {
	slow, dead int
	link       [2]int
}

func (s slowPairs) TestPair(_ context.Context, p fleet.Pair) fleet.PairResult {
	r := fleet.PairResult{Pair: p, Gbps: 100, Seconds: 1}
	switch {
	case p.Server == s.dead || p.Client == s.dead:
		r.Gbps, r.Error = 0, "connect: connection refused"
	case p.Server == s.slow || p.Client == s.slow:
		r.Gbps = 30
	case (p.Server == s.link[0] && p.Client == s.link[1]) || (p.Server == s.link[1] && p.Client == s.link[0]):
		r.Gbps = 40
	}
	return r
}

func hostName(i int) string { return fmt.Sprintf("gpu%03d", i) }

// fleetInputs are the results of an n-host cluster: the fleet doctor
// aggregated from the recorded doctor reports (host 3 without
// nvidia_peermem), the mesh of the real analysis over a fake tester (host 5
// slow, host 7 dead, the link 1-2 slow) and the per-host doctor of host 3.
func fleetInputs(t testing.TB, n int) []Input {
	t.Helper()
	read := func(name string) *erdma.Report {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		var r erdma.Report
		require.NoError(t, json.Unmarshal(b, &r))
		return &r
	}
	healthy, bad := read("doctor-healthy.json"), read("doctor-no-peermem.json")
	var reports []fleet.HostReport
	var hosts []string
	for i := range n {
		rep := healthy
		if i == 3 {
			rep = bad
		}
		reports = append(reports, fleet.HostReport{Rank: i, Host: hostName(i), Report: rep})
		hosts = append(hosts, hostName(i))
	}
	fr := fleet.Aggregate(n, reports, nil)
	mesh := fleet.RunMesh(context.Background(), hosts, slowPairs{slow: 5, dead: 7, link: [2]int{1, 2}}, fleet.MeshOptions{ExpectGbps: 100})
	b, err := os.ReadFile(filepath.Join("testdata", "nccl-run-B02.json"))
	require.NoError(t, err)
	var run nccl.RunReport
	require.NoError(t, json.Unmarshal(b, &run))
	proof := fleet.Judge(fleet.Judgement{Size: n, Doctor: fr, Reports: reports, Mesh: mesh, NCCL: &run, Authenticated: true, Seconds: 98})
	var ins []Input
	for _, v := range []struct {
		name string
		v    any
	}{{"fleet-prove.json", proof}, {"fleet-doctor.json", fr}, {"bw-mesh.json", mesh}, {"doctor-gpu003.json", bad}} {
		in, err := FromValue(v.name, v.v)
		require.NoError(t, err)
		ins = append(ins, in)
	}
	return ins
}

// fileInputs reads every JSON in testdata (the CLI's own --json output).
func fileInputs(t testing.TB) []Input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var ins []Input
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "not-a-result") {
			continue
		}
		in, err := ReadFile(context.Background(), f)
		require.NoError(t, err, f)
		ins = append(ins, in)
	}
	return ins
}

func jsonOf(in Input) ([]byte, error) { return json.Marshal(in.value) }

// doctorInputs are n hosts' doctor reports, every other one without
// nvidia_peermem, each with its own host name.
func doctorInputs(t testing.TB, n int) []Input {
	t.Helper()
	var ins []Input
	for i := range n {
		name := "doctor-healthy.json"
		if i%2 == 1 {
			name = "doctor-no-peermem.json"
		}
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		var r erdma.Report
		require.NoError(t, json.Unmarshal(b, &r))
		r.Host.Hostname = hostName(i)
		in, err := FromValue(hostName(i)+".json", &r)
		require.NoError(t, err)
		ins = append(ins, in)
	}
	return ins
}

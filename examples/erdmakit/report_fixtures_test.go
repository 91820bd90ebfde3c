package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/nccl"
)

// The JSON fixtures of package report (report/testdata) are made by the
// code, not kept by hand: TestReportFixturesAreCurrent makes each one and
// fails where the committed file differs, so a change of a finding's words
// (the doctor's fix) cannot leave a stale fixture, or a stale picture in
// docs/report.md, behind. `make report-fixtures` (ERDMAKIT_UPDATE_FIXTURES=1)
// writes them.
//
// How each is made, from the repository root:
//   - the CLI's own --json, run in this process: the doctor of recorded
//     hosts, parse of the samples, setup --dry-run, nccl run --dry-run,
//     perftest without an RDMA device (needs ib_write_bw, ib_write_lat), and
//     bw lat / bw loopback on an emulated device (measured: compared with
//     every number masked);
//   - fleet prove over four ranks of fleet.Prove in this process, meeting
//     over loopback TCP as mpirun's ranks do (the real rendezvous, the
//     doctor of four recorded hosts, the mesh's analysis), each rank's pair
//     tests answered by a fixed table of Gbit/s instead of a device, and
//     the NCCL stage the B02 sample replayed through nccl.RunArgv (cat) as
//     nccl run reads mpirun's output; its fleet doctor and bw mesh reports
//     are fleet-doctor-4.json and bw-mesh-4.json, its NCCL report
//     nccl-run-B02.json. The durations ("seconds", "duration_s") are masked.
//
// No mpirun, srun or qemu is needed.

// fixtureRecipe makes one fixture.
type fixtureRecipe struct {
	file string
	args []string // the CLI's arguments; nil: made by the code in make
	// measured: the figures vary from run to run (emulated devices'
	// timing): every number, and every decimal in a string, is masked.
	measured bool
	needs    string // a program the command runs (ib_write_bw)
}

var reportFixtures = []fixtureRecipe{
	{file: "doctor-healthy.json", args: []string{"doctor", "--json", "--no-metadata", "--root", "testdata/hosts/ebmgn8is-healthy.tar.gz"}},
	{file: "doctor-no-peermem.json", args: []string{"doctor", "--json", "--no-metadata", "--root", "testdata/hosts/no-peermem.tar.gz"}},
	{file: "parse-nccl-B02.json", args: []string{"parse", "nccl", "--json", "nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt"}},
	{file: "parse-nccl-B04.json", args: []string{"parse", "nccl", "--json", "nccl/ncclog/testdata/B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt"}},
	{file: "parse-nccl-log-C05.json", args: []string{"parse", "nccl-log", "--json", "nccl/ncclog/testdata/C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt"}},
	{file: "parse-perftest-A02.json", args: []string{"parse", "perftest", "--json", "perf/perftest/testdata/A02_ib_write_bw_loopback_all_sizes_interleaved_noindent_superbench.txt"}},
	{file: "parse-perftest-A08.json", args: []string{"parse", "perftest", "--json", "perf/perftest/testdata/A08_ib_write_bw_client_error_couldnt_connect_unable_init_socket.txt"}},
	{file: "parse-topo-E01.json", args: []string{"parse", "topo", "--json", "nvml/smitopo/testdata/topo-E01-tab-8gpu-10nic.txt"}},
	{file: "setup-dry-memlock-64k.json", args: []string{"setup", "--dry-run", "--json", "--root", "testdata/hosts/memlock-64k.tar.gz", "--metadata-url", "http://127.0.0.1:1", "--network-stack", "networkd"}},
	{file: "not-a-result-nccl-run-dry.json", args: []string{"nccl", "run", "--hosts", "host1:8,host2:8", "--dry-run", "--json"}},
	{file: "perftest-loopback-fail.json", args: []string{"perftest", "-d", "erdma_0", "-q", "16", "--json"}, needs: "ib_write_bw"},
	{file: "perftest-lat-fail.json", args: []string{"perftest", "lat", "-d", "erdma_0", "--json"}, needs: "ib_write_lat"},
	{file: "bw-lat.json", args: []string{"bw", "lat", "--json", "--emulate-gbps", "10", "-n", "200", "--sizes", "2,4K"}, measured: true},
	{file: "bw-loopback.json", args: []string{"bw", "loopback", "--json", "--emulate-gbps", "50", "--sizes", "4K,64K,1M", "-D", "200ms"}, measured: true},
	{file: "fleet-prove-4.json"},
	{file: "fleet-doctor-4.json"},
	{file: "bw-mesh-4.json"},
	{file: "nccl-run-B02.json"},
}

func TestReportFixturesAreCurrent(t *testing.T) {
	update := os.Getenv("ERDMAKIT_UPDATE_FIXTURES") == "1"
	t.Chdir(filepath.Join("..", "..")) // the paths in the fixtures are the repository's
	dir := filepath.Join("report", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	made := map[string]bool{}
	for _, r := range reportFixtures {
		made[r.file] = true
	}
	for _, f := range files {
		assert.True(t, made[filepath.Base(f)], "%s: no recipe in reportFixtures makes it", f)
	}
	fleetFixtures := sync.OnceValue(func() map[string][]byte { return makeFleetFixtures(t) })
	for _, r := range reportFixtures {
		t.Run(r.file, func(t *testing.T) {
			var got []byte
			switch {
			case r.args != nil:
				if r.needs != "" {
					if _, err := exec.LookPath(r.needs); err != nil {
						if os.Getenv("CI") == "true" {
							t.Fatalf("%s is not installed (perftest; .ci/deps.sh test)", r.needs)
						}
						t.Skipf("%s is not installed", r.needs)
					}
				}
				code, out, stderr := runCLI(r.args...)
				require.Less(t, code, ExitUnknown, "erdmakit %v: %s", r.args, stderr)
				got = []byte(out)
			default:
				got = fleetFixtures()[r.file]
				require.NotNil(t, got)
			}
			path := filepath.Join(dir, r.file)
			want, err := os.ReadFile(path)
			if update && err != nil {
				want = nil
			} else {
				require.NoError(t, err)
			}
			exact := r.args != nil && !r.measured
			same := bytes.Equal(want, got) || (!exact && want != nil && masked(t, want, r.measured) == masked(t, got, r.measured))
			if update {
				if !same { // a fixture whose only change is its timing is left alone
					require.NoError(t, os.WriteFile(path, got, 0o644))
				}
				return
			}
			if exact {
				assert.True(t, same, "%s differs from what the code makes now: make report-fixtures", path)
				if !same {
					assert.Equal(t, string(want), string(got))
				}
				return
			}
			assert.Equal(t, masked(t, want, r.measured), masked(t, got, r.measured),
				"%s differs from what the code makes now (durations masked%s): make report-fixtures", path, map[bool]string{true: ", and every figure"}[r.measured])
		})
	}
}

// timedKeys are the keys whose value is a duration: masked.
var timedKeys = map[string]bool{"seconds": true, "duration_s": true}

var decimal = regexp.MustCompile(`\d+\.\d+`)

// masked is the JSON in b, re-encoded with the durations (and with
// figures, every number and every decimal in a string) replaced.
func masked(t *testing.T, b []byte, figures bool) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e, k)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e, key)
			}
		case json.Number:
			if figures || timedKeys[key] {
				return "N"
			}
		case string:
			if figures {
				return decimal.ReplaceAllString(x, "N.N")
			}
		}
		return v
	}
	out, err := json.MarshalIndent(walk(v, ""), "", "  ")
	require.NoError(t, err)
	return string(out)
}

// meshTable is the fixture mesh's Gbit/s per pair of ranks (a fixed
// table, not a measurement): 24 Gbit/s but the link between ranks 1 and 3
// at 6.
func meshTable(a, b int) float64 {
	if (a == 1 && b == 3) || (a == 3 && b == 1) {
		return 6
	}
	return 24
}

// tableWorker serves no test and answers each of its pair tests from
// meshTable: the server's mesh position is the port's offset from base.
type tableWorker struct{ me, base int }

func (w tableWorker) Serve(ctx context.Context, _ int, ready func()) error {
	ready()
	<-ctx.Done()
	return nil
}

func (w tableWorker) Client(_ context.Context, _ string, port int) fleet.PairResult {
	g := meshTable(w.me, port-w.base)
	return fleet.PairResult{Gbps: g, Seconds: 2, Devices: []fleet.DeviceResult{{Index: 0, Name: "erdma_0", Gbps: g}}}
}

// makeFleetFixtures runs fleet prove over four ranks in this process and
// returns its JSON and its stages' (see the package comment above).
func makeFleetFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	hosts := []string{"ebmgn8is-healthy", "ebmgn8is-healthy", "no-peermem", "mtu-mismatch"}
	rdv := fmt.Sprintf("127.0.0.1:%d", fixture.FreePort(t))
	base := 21000 + fixture.FreePort(t)%20000
	sample := "nccl/ncclog/testdata/B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ncclStage := func(ctx context.Context, jh []fleet.JobHost) (*nccl.RunReport, error) {
		c := nccl.DefaultCommand()
		c.Hosts = nil
		for _, h := range jh {
			c.Hosts = append(c.Hosts, nccl.Host{Name: h.Host, Slots: 8})
		}
		argv, err := c.Argv()
		if err != nil {
			return nil, err
		}
		// mpirun's output, replayed: the B02 sample through the same
		// reader nccl run uses.
		res, err := nccl.RunArgv(ctx, []string{"cat", sample}, nccl.RunOptions{})
		if err != nil {
			return nil, err
		}
		res.Argv, res.Env = argv, c.Vars()
		return nccl.NewRunReport(res, nccl.Expectation{BusBWGBs: 400}), nil
	}
	var wg sync.WaitGroup
	var proof *fleet.Proof
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc := fleet.ProveConfig{
				Options: fleet.Options{Hostname: fmt.Sprintf("vm#%d", i), Secret: []byte("report fixtures"), Authenticated: true, Join: time.Minute},
				Doctor: func(ctx context.Context) (*erdma.Report, error) {
					return runDoctorOn(ctx, filepath.Join("testdata", "hosts", h+".tar.gz"), defaultDoctorFlags().options(), nil)
				},
				Worker: tableWorker{me: i, base: base},
				Port:   base,
				Mesh:   fleet.MeshOptions{ExpectGbps: 25},
			}
			if i == 0 {
				pc.NCCL = ncclStage
			}
			p, err := fleet.Prove(ctx, fleet.Rank{Rank: i, Size: len(hosts), Launcher: "flag"}, rdv, pc)
			errs[i] = err
			if i == 0 {
				proof = p
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "rank %d", i)
	}
	require.NotNil(t, proof)
	require.NotNil(t, proof.Doctor)
	require.NotNil(t, proof.Mesh)
	require.NotNil(t, proof.NCCL)
	enc := func(v any) []byte {
		var b bytes.Buffer
		require.NoError(t, render.JSON(&b, v))
		return b.Bytes()
	}
	return map[string][]byte{
		"fleet-prove-4.json":  enc(proof),
		"fleet-doctor-4.json": enc(proof.Doctor),
		"bw-mesh-4.json":      enc(proof.Mesh),
		"nccl-run-B02.json":   enc(proof.NCCL),
	}
}

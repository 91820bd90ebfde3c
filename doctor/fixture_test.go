package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/internal/hostgen"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateDoctorGolden = flag.Bool("update-doctor-golden", false, "rewrite testdata/doctor/*.json from the current doctor")

func hostDir(t testing.TB, name string) string { return fixture.Host(t, name) }

// diagnoseRecorded runs the doctor the way `erdmakit doctor --root DIR` does.
func diagnoseRecorded(t testing.TB, dir string) (*erdma.Report, error) {
	t.Helper()
	return doctor.Run(context.Background(), erdma.RecordedHost(dir), doctor.DefaultOptions())
}

// allChecks are the pipeline's checks.
func allChecks(t testing.TB) []erdma.Check {
	cs, err := doctor.Checks()
	require.NoError(t, err)
	return cs
}

func severities(r *erdma.Report) map[string]health.Severity {
	m := map[string]health.Severity{}
	for _, f := range r.Findings {
		m[f.ID] = f.Severity
	}
	return m
}

// TestDoctorFixtures: every recorded host gives exactly the expected
// findings. Checks not listed must be ok.
func TestDoctorFixtures(t *testing.T) {
	const (
		ok   = health.OK
		warn = health.Warn
		fail = health.Fail
		skip = health.Skip
	)
	for _, tc := range []struct {
		host   string
		status health.Severity
		want   map[string]health.Severity // ids that are not ok
		text   map[string]string          // id -> substring of its summary
	}{
		{host: "ebmgn8is-healthy", status: ok,
			text: map[string]string{"erdma-devices": "2 eRDMA device(s): erdma_0, erdma_1", "gid-index": "NCCL_IB_GID_INDEX=-1",
				"mtu": "MTU 8500", "transport-mode": "compat mode"}},
		{host: "gn8is-single", status: ok, want: map[string]health.Severity{"network-card-channel": skip},
			text: map[string]string{"erdma-devices": "1 eRDMA device(s)"}},
		{host: "iwarp-mode", status: warn, want: map[string]health.Severity{"erdma-devices": warn, "transport-mode": warn, "gid-index": skip, "network-card-channel": skip},
			text: map[string]string{"transport-mode": "rdma_cm"}},
		{host: "port-down-no-ip", status: fail, want: map[string]health.Severity{"netdev-ip": fail, "port-active": fail, "gid-index": fail},
			text: map[string]string{"port-active": "erdma_1 port 1 is DOWN", "netdev-ip": "eth2 (erdma_1) has no IPv4 address"}},
		{host: "no-erdma-driver", status: fail, want: map[string]health.Severity{"erdma-devices": fail, "erdma-driver": fail, "eadm": warn,
			"network-card-channel": skip, "uverbs": skip, "netdev-ip": skip, "port-active": skip, "transport-mode": skip,
			"gid-index": skip, "mtu": skip, "rate-limit-drops": skip, "gpu-nic-distance": skip},
			text: map[string]string{"erdma-devices": "no eRDMA device on this host", "erdma-driver": "not loaded"}},
		{host: "no-peermem", status: fail, want: map[string]health.Severity{"gdr-peermem": fail},
			text: map[string]string{"gdr-peermem": "neither nvidia_peermem nor nv_peer_mem"}},
		{host: "memlock-64k", status: fail, want: map[string]health.Severity{"memlock": fail},
			text: map[string]string{"memlock": "memlock 64 KiB: every ibv_create_qp fails with ENOMEM"}},
		{host: "mtu-mismatch", status: fail, want: map[string]health.Severity{"mtu": fail},
			text: map[string]string{"mtu": "1400 on eth2; 8500 on eth1"}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			r, err := diagnoseRecorded(t, hostDir(t, tc.host))
			require.NoError(t, err)
			got := severities(r)
			require.Len(t, r.Findings, len(allChecks(t)))
			for _, c := range allChecks(t) {
				want, listed := tc.want[c.ID]
				if !listed {
					want = ok
					if c.ID == doctor.FindingVerbs {
						want = skip // libibverbs is probed only on a live host
					}
				}
				assert.Equal(t, want, got[c.ID], "%s: %s", c.ID, summaryOf(r, c.ID))
			}
			assert.Equal(t, tc.status, r.Status)
			for id, s := range tc.text {
				assert.Contains(t, summaryOf(r, id), s, id)
			}
			for _, f := range r.Findings {
				if f.Severity == fail || f.Severity == warn {
					assert.NotEmpty(t, f.Remediation, "%s has a fix", f.ID)
					assert.NotEmpty(t, f.Evidence, "%s quotes evidence", f.ID)
				}
			}
		})
	}
}

func summaryOf(r *erdma.Report, id string) string {
	for _, f := range r.Findings {
		if f.ID == id {
			return f.Summary
		}
	}
	return ""
}

// TestDoctorHealthyGolden pins the JSON report of the healthy host, the
// public schema of `erdmakit doctor --json`: status and findings exactly;
// of "host" (the inventory, tested by its own package) every key the golden
// file has must still be there: fields may be added, never renamed.
func TestDoctorHealthyGolden(t *testing.T) {
	root := hostDir(t, "ebmgn8is-healthy")
	r, err := diagnoseRecorded(t, root)
	require.NoError(t, err)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(r))
	// The fixture is unpacked somewhere new each run: the golden says ROOT.
	out := bytes.ReplaceAll(b.Bytes(), []byte(root), []byte("ROOT"))
	golden := filepath.Join("testdata", "ebmgn8is-healthy.report.json")
	if *updateDoctorGolden {
		require.NoError(t, os.WriteFile(golden, out, 0o644))
	}
	raw, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -run TestDoctorHealthyGolden ./doctor/ -args -update-doctor-golden")
	var want, got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NoError(t, json.Unmarshal(out, &got))
	assert.ElementsMatch(t, []string{"status", "findings", "host"}, keys(got))
	assert.JSONEq(t, string(want["status"]), string(got["status"]))
	assert.JSONEq(t, string(want["findings"]), string(got["findings"]))
	var wantHost, gotHost any
	require.NoError(t, json.Unmarshal(want["host"], &wantHost))
	require.NoError(t, json.Unmarshal(got["host"], &gotHost))
	assert.Empty(t, missingKeys("host", wantHost, gotHost), "inventory JSON names are the public schema")
	var f []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got["findings"], &f))
	assert.Subset(t, []string{"id", "severity", "summary", "evidence", "remediation"}, keys(f[0]))
}

// missingKeys lists the object keys of want (recursively, arrays by their
// first element) that got lacks.
func missingKeys(path string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path + " (not an object)"}
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, missingKeys(path+"."+k, v, gv)...)
		}
	case []any:
		g, ok := got.([]any)
		if ok && len(w) > 0 && len(g) > 0 {
			out = append(out, missingKeys(path+"[0]", w[0], g[0])...)
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	return k
}

// TestDoctorMutations removes, then garbles, each file of the healthy
// fixture in turn: the doctor completes every time (never panics), and the
// damage shows in the report (a finding's severity, summary or evidence
// changes), as a read error naming the file, or as an error naming it.
// Only files the doctor does not judge may change nothing.
func TestDoctorMutations(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, hostgen.CopyTree(hostDir(t, "ebmgn8is-healthy"), dir))
	base, err := diagnoseRecorded(t, dir)
	require.NoError(t, err)
	// The GID entries the doctor recommends are judged; the others are not.
	judgedGIDs := map[string]bool{}
	for _, d := range base.Host.Devices {
		for _, p := range d.Ports {
			judgedGIDs[fmt.Sprintf("%s/ports/%d/gids/%d", d.Name, p.Number, p.RecommendedGIDIndex)] = true
			judgedGIDs[fmt.Sprintf("%s/ports/%d/gid_attrs/types/%d", d.Name, p.Number, p.RecommendedGIDIndex)] = true
			judgedGIDs[fmt.Sprintf("%s/ports/%d/gid_attrs/ndevs/%d", d.Name, p.Number, p.RecommendedGIDIndex)] = true
		}
	}
	// The GPU side of the fixture (written by nvml's gpugen, listed in
	// erdmakit/gpugen-files.txt): the CLI's GPU mutation test damages those
	// files.
	// With NVML's snapshot the driver version is NVML's; the module's
	// version file is only the fallback without NVML.
	gpuFiles := map[string]bool{"erdmakit/gpugen-files.txt": true, "sys/module/nvidia/version": true}
	if b, err := os.ReadFile(filepath.Join(dir, "erdmakit/gpugen-files.txt")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				gpuFiles[l] = true
			}
		}
	}
	irrelevant := func(mut, rel string) bool {
		if gpuFiles[filepath.ToSlash(rel)] {
			return true
		}
		for _, s := range []string{"README.md", "hostgen-files.txt", "proc/sys/kernel/", "sys_image_guid", "/fw_ver",
			"/rate", "/link_layer", "/phys_state", "/class", "abi_version", "rdma_cm", "initstate", "/ibdev",
			"/lid", "/sm_lid", "infiniband_verbs/uverbs"} {
			if strings.Contains(rel, s) {
				return true
			}
		}
		if mut == "garble" && strings.HasPrefix(rel, "dev/") {
			return true // char devices: only their existence is read
		}
		if strings.Contains(rel, "/gids/") || strings.Contains(rel, "/gid_attrs/") {
			for k := range judgedGIDs {
				if strings.HasSuffix(rel, k) {
					return false
				}
			}
			return true
		}
		// Counters other than the rate-limit drops are reported, not judged.
		return strings.Contains(rel, "hw_counters/") && !strings.Contains(rel, "_limit_drop_cnt")
	}
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	}))
	require.NotEmpty(t, files)
	garbage := []byte{0x00, 0xff, 'x', 0x80, '\n'}
	unnoticed := map[string][]string{}
	for _, mut := range []string{"remove", "garble"} {
		for _, rel := range files {
			p := filepath.Join(dir, rel)
			orig, err := os.ReadFile(p)
			require.NoError(t, err)
			if mut == "remove" {
				require.NoError(t, os.Remove(p))
			} else {
				require.NoError(t, os.WriteFile(p, garbage, 0o644))
			}
			var r *erdma.Report
			require.NotPanics(t, func() { r, err = diagnoseRecorded(t, dir) }, "%s %s", mut, rel)
			require.NoError(t, os.WriteFile(p, orig, 0o644))
			if err != nil {
				assert.Contains(t, err.Error(), filepath.Base(rel), "%s %s: the error names the file", mut, rel)
				continue
			}
			require.Len(t, r.Findings, len(allChecks(t)), "%s %s", mut, rel)
			for _, f := range r.Findings {
				assert.NotContains(t, f.Summary, "internal error", "%s %s", mut, rel)
			}
			if changed(base, r) || namesFile(r, rel) || irrelevant(mut, rel) {
				continue
			}
			unnoticed[mut] = append(unnoticed[mut], rel)
		}
	}
	assert.Empty(t, unnoticed, "damage the doctor neither reports nor names")
}

// changed reports whether any finding differs from base in severity,
// summary or evidence.
func changed(base, r *erdma.Report) bool {
	for i, f := range r.Findings {
		b := base.Findings[i]
		if b.Severity != f.Severity || b.Summary != f.Summary || strings.Join(b.Evidence, "\n") != strings.Join(f.Evidence, "\n") {
			return true
		}
	}
	return false
}

// namesFile reports whether a read error or finding evidence names rel.
func namesFile(r *erdma.Report, rel string) bool {
	for _, e := range r.Host.Errors {
		if strings.Contains(e, rel) || strings.Contains(e, filepath.Base(rel)) {
			return true
		}
	}
	return false
}

// BenchmarkDoctor is `erdmakit doctor --root` on the 8-GPU/2-NIC healthy
// fixture: ReadInventory (tools and counters from the recording) + Diagnose.
func BenchmarkDoctor(b *testing.B) {
	h := erdma.RecordedHost(hostDir(b, "ebmgn8is-healthy"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := doctor.Run(ctx, h, doctor.Options{})
		if err != nil || r.Status != health.OK {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkDiagnose is the pipeline without the inventory read (instance,
// NVML snapshot, checks) on the healthy fixture's inventory.
func BenchmarkDiagnose(b *testing.B) {
	h := erdma.RecordedHost(hostDir(b, "ebmgn8is-healthy"))
	inv, err := erdma.ReadInventory(context.Background(), h, erdma.InventoryOptions{})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := doctor.Diagnose(ctx, h, inv, doctor.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoctorDevices runs the doctor on generated hosts with 2, 8 and
// 32 eRDMA devices and reports the cost per device.
func BenchmarkDoctorDevices(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			require.NoError(b, hostgen.Write(dir, hostgen.Host("bench", hostgen.ManyNICs(n))))
			h := erdma.RecordedHost(dir)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := doctor.Run(ctx, h, doctor.Options{})
				if err != nil || len(r.Host.Devices) != n {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// TestDoctorRecordReplay: every fixture recorded with `erdmakit record` and
// replayed from the archive gives the same report (evidence paths aside,
// which name the root).
func TestDoctorRecordReplay(t *testing.T) {
	for _, s := range hostgen.Fixtures() {
		t.Run(s.Name, func(t *testing.T) {
			root := hostDir(t, s.Name)
			orig, err := diagnoseRecorded(t, root)
			require.NoError(t, err)
			archive := filepath.Join(t.TempDir(), "host.tar.gz")
			out, err := os.Create(archive)
			require.NoError(t, err)
			// As `erdmakit record` does: the GPU files nvml reads go along.
			lib, err := nvml.ForRoot(t.Context(), root)
			require.NoError(t, err)
			files, err := nvml.RecordFiles(context.Background(), lib, root, "test")
			require.NoError(t, err)
			_, err = erdma.Record(context.Background(), erdma.RecordedHost(root), out, erdma.RecordOptions{Files: files})
			require.NoError(t, err)
			require.NoError(t, out.Close())
			h, closer, err := erdma.OpenHost(t.Context(), archive)
			require.NoError(t, err)
			defer closer.Close()
			replayed, err := diagnoseRecorded(t, h.Root())
			require.NoError(t, err)
			assert.Equal(t, orig.Status, replayed.Status)
			require.Len(t, replayed.Findings, len(orig.Findings))
			for i, f := range orig.Findings {
				g := replayed.Findings[i]
				assert.Equal(t, f.ID, g.ID)
				assert.Equal(t, f.Severity, g.Severity, f.ID)
				assert.Equal(t, f.Summary, g.Summary, f.ID)
				assert.Equal(t, f.Remediation, g.Remediation, f.ID)
				for j := range f.Evidence {
					f.Evidence[j] = strings.ReplaceAll(f.Evidence[j], root, "ROOT")
				}
				for j := range g.Evidence {
					g.Evidence[j] = strings.ReplaceAll(g.Evidence[j], h.Root(), "ROOT")
				}
				assert.Equal(t, f.Evidence, g.Evidence, f.ID)
			}
		})
	}
}

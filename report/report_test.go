package report

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"encoding/json"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDetectsEveryKindFromTheCLIsJSON(t *testing.T) {
	want := map[string]Kind{
		"doctor-healthy.json":            KindDoctor,
		"doctor-no-peermem.json":         KindDoctor,
		"bw-lat.json":                    KindLatency,
		"bw-loopback.json":               KindBw,
		"parse-nccl-B02.json":            KindNCCLTests,
		"parse-nccl-B04.json":            KindNCCLTests,
		"parse-nccl-log-C05.json":        KindNCCLLog,
		"parse-perftest-A02.json":        KindPerftestLog,
		"parse-perftest-A08.json":        KindPerftestLog,
		"parse-topo-E01.json":            KindTopo,
		"fleet-doctor-4.json":            KindFleetDoctor,
		"bw-mesh-4.json":                 KindMesh,
		"not-a-result-nccl-run-dry.json": "",
		"perftest-loopback-fail.json":    KindPerftest,
		"nccl-run-B02.json":              KindNCCLRun,
		"perftest-lat-fail.json":         KindPerftestLat,
		"fleet-prove-4.json":             KindFleetProve,
		"setup-dry-memlock-64k.json":     KindSetup,
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		base := filepath.Base(f)
		k, ok := want[base]
		require.True(t, ok, "testdata/%s: add it to the table", base)
		in, err := ReadFile(context.Background(), f)
		if k == "" {
			require.ErrorIs(t, err, ErrUnknownInput, base)
			assert.Contains(t, err.Error(), base)
			continue
		}
		require.NoError(t, err, base)
		assert.Equal(t, k, in.Kind, base)
		assert.Empty(t, in.Unknown(), "%s: keys the types do not know", base)
	}
}

func TestUnknownInputNamesTheFile(t *testing.T) {
	for _, c := range []struct{ name, data string }{
		{"notes.txt", "hello"},
		{"list.json", "[1,2]"},
		{"other.json", `{"apiVersion":"v1","items":[]}`},
		{"empty.json", ""},
		{"kind.json", `{"kind":"quantum-prove","status":"ok"}`},
	} {
		_, err := FromJSON(c.name, []byte(c.data))
		require.ErrorIs(t, err, ErrUnknownInput, c.name)
		assert.True(t, strings.HasPrefix(err.Error(), c.name+": "), err.Error())
	}
	_, err := FromValue("x", 42)
	assert.ErrorIs(t, err, ErrUnknownInput)
	_, err = ReadFile(context.Background(), filepath.Join(t.TempDir(), "absent.json"))
	assert.ErrorContains(t, err, "absent.json")
}

// A result from a newer erdmakit: keys this version does not know are
// rendered around and named on the page.
func TestNewerSchemaRendersWhatItKnows(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "doctor-no-peermem.json"))
	require.NoError(t, err)
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	v["schema_version"] = 7
	v["findings"].([]any)[0].(map[string]any)["confidence"] = 0.9
	b, err = json.Marshal(v)
	require.NoError(t, err)
	in, err := FromJSON("newer.json", b)
	require.NoError(t, err)
	assert.Equal(t, KindDoctor, in.Kind)
	assert.Equal(t, []string{".findings[].confidence", ".schema_version"}, in.Unknown())
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{}, in))
	page := out.String()
	has(t, page, "may come from a newer erdmakit")
	has(t, page, ".findings[].confidence")
	has(t, page, "gdr-peermem")
}

func TestPageOfEveryKind(t *testing.T) {
	ins := append(fileInputs(t), fleetInputs(t, 12)...)
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{Title: "cluster bring-up"}, ins...))
	page := out.String()
	assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"))
	has(t, page, "<title>cluster bring-up: broken</title>")
	has(t, page, `<p class="head">BROKEN: `)
	has(t, page, "first fix")
	// The failing findings, the culprits, each section.
	for _, want := range []string{"gdr-peermem", "mesh-dead-host", "mesh-bad-host", "mesh-bad-link", "gpu007", "gpu005",
		"nccl-tests rows", "GPU and NIC topology", "RDMA write latency", "perftest-error"} {
		has(t, page, want)
	}
	// Charts inline, nothing from elsewhere.
	assert.GreaterOrEqual(t, strings.Count(page, "<svg"), 6)
	hasNot(t, page, "<?xml")
	for _, ref := range []string{"http://", "https://", "src=", "@import", "url("} {
		for _, line := range strings.Split(page, "\n") {
			if strings.Contains(line, ref) && !strings.Contains(line, "xmlns") {
				t.Errorf("the page refers elsewhere (%q): %.200s", ref, line)
			}
		}
	}
}

func TestNoInput(t *testing.T) {
	assert.ErrorIs(t, Write(&bytes.Buffer{}, Options{}), ErrNoInput)
}

// Hostile strings in a result (a host name with markup) are text on the
// page, never markup, in the tables and in the charts alike.
func TestHostileNamesAreEscaped(t *testing.T) {
	ins := fleetInputs(t, 4)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	b, err := json.Marshal(ins[2].value)
	require.NoError(t, err)
	b = bytes.ReplaceAll(b, []byte("gpu002"), []byte(strings.ReplaceAll(strings.ReplaceAll(evil, `<`, `\u003c`), `>`, `\u003e`)))
	in, err := FromJSON("evil.json", b)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{}, in))
	hasNot(t, out.String(), "<script>alert")
	hasNot(t, out.String(), "<img src=x")
}

func TestRedactAsRecordDoes(t *testing.T) {
	ins := append(fleetInputs(t, 4), fileInputs(t)...)
	ids := &erdma.Report{Status: health.Warn, Findings: []health.Finding{{ID: "ids", Severity: health.Warn, Summary: "what identifies a host",
		Evidence: []string{"mac 00:16:3e:2f:37:70 on eth1", "gid fe80:0000:0000:0000:0216:3eff:fe2f:3770", "GPU-6a1b2c3d-1111-2222-3333-444455556666"}}}}
	in, err := FromValue("ids", ids)
	require.NoError(t, err)
	ins = append(ins, in)
	var plain, red bytes.Buffer
	require.NoError(t, Write(&plain, Options{}, ins...))
	require.NoError(t, Write(&red, Options{Redact: true}, ins...))
	secrets := []string{"gpu003", "gpu-node-a", "vm#2", "i-bp1erdmakit0000001", "cn-hangzhou", "192.168.10.11", "00:16:3e:2f:37:70", "192.168.125.211",
		"fe80:0000:0000:0000:0216:3eff:fe2f:3770", "GPU-6a1b2c3d"}
	for _, s := range secrets {
		has(t, plain.String(), s, "the fixture has it")
		hasNot(t, red.String(), s)
	}
	page := red.String()
	for _, want := range []string{"host-1", "i-redacted1", "xx-redacted", "mac 00:16:3e:00:00:", "GPU-00000000-0000-0000-0000-000000000001", "redacted: host names", "gdr-peermem", "mesh-bad-link"} {
		has(t, page, want)
	}
	// The inputs themselves are not changed.
	plain2 := bytes.Buffer{}
	require.NoError(t, Write(&plain2, Options{}, ins...))
	assert.Equal(t, plain.String(), plain2.String())
}

// has and hasNot check a page for a string without printing the page.
func has(t *testing.T, page, want string, msg ...any) {
	t.Helper()
	if !strings.Contains(page, want) {
		t.Errorf("the page lacks %q %v", want, msg)
	}
}

func hasNot(t *testing.T, page, unwanted string, msg ...any) {
	t.Helper()
	if strings.Contains(page, unwanted) {
		i := strings.Index(page, unwanted)
		t.Errorf("the page has %q: ...%s... %v", unwanted, page[max(0, i-80):min(len(page), i+80)], msg)
	}
}

// FuzzFromJSON: any bytes are an Input or an error, never a panic; an
// Input always renders, redacted or not.
func FuzzFromJSON(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(f, err)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"doctor","findings":null,"host":null,"status":"bogus"}`))
	f.Add([]byte(`{"status":"fail","hosts":["a","b"],"matrix":[[null,1],[1]],"rounds":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := FromJSON("fuzz.json", b)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "fuzz.json: "), err.Error())
			return
		}
		for _, redact := range []bool{false, true} {
			require.NoError(t, Write(io.Discard, Options{Redact: redact}, in))
		}
	})
}

// A hostile result: huge lists and strings make a bounded page.
func TestHugeInputMakesABoundedPage(t *testing.T) {
	r := &erdma.Report{Status: health.Fail}
	long := strings.Repeat("x", 1<<20)
	for i := range 20000 {
		r.Findings = append(r.Findings, health.Finding{ID: fmt.Sprintf("c%d", i), Severity: health.Fail, Summary: long[:1000],
			Evidence: make([]string, 100)})
	}
	r.Findings[0].Summary = long
	in, err := FromValue("huge", r)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{}, in))
	assert.Less(t, out.Len(), 40<<20)
	has(t, out.String(), "only the first 5000 findings")
	has(t, out.String(), "more bytes)")
	has(t, out.String(), "... and 76 more lines")
}

// Status is the page's verdict: a setup dry run (ok as a plan) whose
// doctor fails now is fail, as its page says.
func TestStatusIsThePagesVerdict(t *testing.T) {
	in, err := ReadFile(context.Background(), filepath.Join("testdata", "setup-dry-memlock-64k.json"))
	require.NoError(t, err)
	assert.Equal(t, health.Fail, Status(in))
	ok, err := ReadFile(context.Background(), filepath.Join("testdata", "doctor-healthy.json"))
	require.NoError(t, err)
	assert.Equal(t, health.OK, Status(ok))
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{}, in))
	has(t, out.String(), `<p class="head">FAIL: `)
}

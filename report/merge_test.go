package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
)

func readInputs(t *testing.T, names ...string) []Input {
	t.Helper()
	var ins []Input
	for _, n := range names {
		in, err := ReadFile(context.Background(), filepath.Join("testdata", n))
		require.NoError(t, err)
		ins = append(ins, in)
	}
	return ins
}

// onePerHostAndCheck: no host is named twice, no check twice on a host,
// no host both fail and ok for one check.
func onePerHostAndCheck(t *testing.T, p *page) {
	t.Helper()
	hosts := map[string]int{}
	for _, h := range p.Hosts {
		hosts[h.Host]++
		ids := map[string]int{}
		for _, id := range h.Problems {
			ids[id]++
		}
		for id, n := range ids {
			assert.Equal(t, 1, n, "host %s lists %s %d times", h.Host, id, n)
		}
		assert.Equal(t, len(h.Problems), h.Fail+h.Warn, "host %s: fail+warn counts its problems once", h.Host)
	}
	for h, n := range hosts {
		assert.Equal(t, 1, n, "host %s has %d rows", h, n)
	}
	type key struct{ host, id string }
	seen := map[key]health.Severity{}
	for _, f := range p.Findings {
		if f.Host == "" {
			continue
		}
		k := key{f.Host, f.ID}
		if s, ok := seen[k]; ok {
			t.Errorf("%s %s twice: %s and %s", f.Host, f.ID, s, f.Severity)
		}
		seen[k] = f.Severity
	}
	for _, c := range p.Checks {
		n := c.OK + c.Skip + c.Warn + c.Fail
		assert.LessOrEqual(t, n, len(p.Hosts)+4, "check %s counted %d times for %d hosts", c.ID, n, len(p.Hosts))
	}
}

// fleet doctor and fleet prove of the same four hosts (report-2 item 5):
// each host once, each check once per host; where they differ (here a
// fleet doctor run after vm#3's MTU was fixed) the newest wins and the
// page says which input that was and which it replaces.
func TestHostsMergedAcrossInputs(t *testing.T) {
	ins := readInputs(t, "fleet-prove-4.json", "fleet-doctor-4.json")
	// The fleet doctor, run again once vm#3's MTU was fixed.
	fixed := *ins[1].Value().(*fleet.FleetReport)
	fixed.Hosts = append([]fleet.HostSummary(nil), fixed.Hosts...)
	for i, h := range fixed.Hosts {
		if h.Host == "vm#3" {
			fixed.Hosts[i].Status, fixed.Hosts[i].Problems = fleet.HostOK, []string{}
		}
	}
	var diffs []fleet.Difference
	for _, d := range fixed.Differences {
		if d.ID != "mtu" {
			diffs = append(diffs, d)
		}
	}
	fixed.Differences = diffs
	later, err := FromValue("fleet-doctor-again.json", &fixed)
	require.NoError(t, err)
	ins[1] = later
	p, err := build(Options{}, ins)
	require.NoError(t, err)
	onePerHostAndCheck(t, p)
	require.Len(t, p.Hosts, 4)
	row := func(name string) hostRow {
		for _, h := range p.Hosts {
			if h.Host == name {
				return h
			}
		}
		t.Fatalf("no host %s", name)
		return hostRow{}
	}
	vm2 := row("vm#2")
	assert.Equal(t, fleet.HostFail, vm2.Status)
	assert.Equal(t, []string{"gdr-peermem"}, vm2.Problems)
	assert.Equal(t, 1, vm2.Fail)
	// The fleet doctor, given last, is the newer: vm#3's mtu passes; its
	// link to vm#1 (the prove's mesh) still fails.
	assert.Equal(t, []string{"prove-link"}, row("vm#3").Problems)
	for _, c := range p.Checks {
		if c.ID == "gdr-peermem" {
			assert.Equal(t, 1, c.Fail)
			assert.Equal(t, "vm#2", c.Hosts)
		}
		assert.NotEqual(t, "mtu", c.ID, "no host fails mtu now")
	}
	for _, f := range p.Findings {
		if f.Host == "vm#2" && f.ID == "gdr-peermem" {
			assert.Equal(t, "fleet-doctor-again.json", f.Source)
			assert.Equal(t, "fleet-prove-4.json", f.Replaces)
		}
	}
	assert.Contains(t, p.Notes[len(p.Notes)-1], "from the newest input (the one given last)")

	// With times, the one made last wins, whatever the order: the prove
	// is now the newer, and vm#3's mtu fails.
	ins[0].Time, ins[1].Time = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	p, err = build(Options{}, ins)
	require.NoError(t, err)
	onePerHostAndCheck(t, p)
	assert.Equal(t, fleet.HostFail, row("vm#3").Status)
	assert.Equal(t, []string{"mtu", "prove-link"}, row("vm#3").Problems)
	assert.Contains(t, p.Notes[len(p.Notes)-1], "the file modified last")
}

// Every kind of input and a 12-host cluster on one page: still one row
// per host, one result per host and check.
func TestHostsMergedOnAPageOfEveryKind(t *testing.T) {
	p, err := build(Options{}, append(fileInputs(t), fleetInputs(t, 12)...))
	require.NoError(t, err)
	onePerHostAndCheck(t, p)
}

// The verdict's culprits include the hosts and links a bw mesh input
// fails, not only fleet prove's (report-2 item 6); one fleet prove and its
// mesh blaming the same host name it once.
func TestCulpritsFromABwMesh(t *testing.T) {
	ins := fleetInputs(t, 12)
	mesh := ins[2]
	require.Equal(t, KindMesh, mesh.Kind)
	p, err := build(Options{}, []Input{mesh})
	require.NoError(t, err)
	var got []string
	for _, c := range p.Culprits {
		got = append(got, c.Kind+" "+c.Hosts)
		assert.NotEmpty(t, c.Fix)
		assert.Contains(t, c.FixFrom, "bw-mesh.json")
	}
	assert.ElementsMatch(t, []string{"host gpu007", "host gpu005", "link gpu001 <-> gpu002"}, got)
	assert.Contains(t, p.Headline, "3 failing")

	p, err = build(Options{}, ins)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, c := range p.Culprits {
		seen[c.Kind+" "+c.Hosts]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "culprit %s named %d times", k, n)
	}
	assert.Contains(t, seen, "host gpu005")
}

// A redacted page is the same page every time: host-N numbers the hosts
// in the same order (the docs' pictures are made twice alike).
func TestRedactedPageIsReproducible(t *testing.T) {
	ins := readInputs(t, "fleet-prove-4.json", "bw-mesh-4.json")
	var first string
	for i := range 5 {
		var b strings.Builder
		require.NoError(t, Write(&b, Options{Redact: true}, ins...))
		if i == 0 {
			first = b.String()
			continue
		}
		require.Equal(t, first, b.String(), "run %d", i)
	}
}

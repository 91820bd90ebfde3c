package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func report(status health.Severity, findings ...health.Finding) *erdma.Report {
	return &erdma.Report{Status: status, Findings: findings}
}

func ok(id string) health.Finding {
	return health.Finding{ID: id, Severity: health.OK, Summary: id + " fine"}
}

func TestAggregateSingleHostStandsOut(t *testing.T) {
	var reports []HostReport
	for r := 0; r < 8; r++ {
		peermem := ok("gdr-peermem")
		status := health.OK
		if r == 5 {
			peermem = health.Finding{ID: "gdr-peermem", Severity: health.Fail, Summary: "nvidia_peermem is not loaded"}
			status = health.Fail
		}
		reports = append(reports, HostReport{Rank: r, Host: fmt.Sprintf("gpu%d", r), Report: report(status, ok("port-active"), peermem)})
	}
	fr := Aggregate(9, reports, []int{8})
	assert.Equal(t, health.Fail, fr.Status)
	assert.Equal(t, []string{"gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu6", "gpu7"}, fr.ByStatus["ok"])
	assert.Equal(t, []string{"gpu5"}, fr.ByStatus["fail"])
	assert.Equal(t, []string{"rank 8"}, fr.ByStatus["missing"])
	require.Len(t, fr.Differences, 1)
	d := fr.Differences[0]
	assert.Equal(t, "gdr-peermem", d.ID)
	require.Len(t, d.Groups, 2)
	assert.Equal(t, []string{"gpu5"}, d.Groups[0].Hosts, "the odd one out comes first")
	assert.Equal(t, "nvidia_peermem is not loaded", d.Groups[0].Summary)
	assert.Len(t, d.Groups[1].Hosts, 7)
	assert.Equal(t, []string{"gdr-peermem"}, fr.Hosts[5].Problems)
	assert.Len(t, fr.Hosts, 9)
}

func TestAggregateHostWithoutReport(t *testing.T) {
	fr := Aggregate(2, []HostReport{
		{Rank: 0, Host: "a", Report: report(health.OK, ok("port-active"))},
		{Rank: 1, Host: "b", Error: "doctor: reading /sys: permission denied"},
	}, nil)
	assert.Equal(t, health.Fail, fr.Status)
	assert.Equal(t, []string{"b"}, fr.ByStatus["error"])
	assert.Empty(t, fr.Differences, "a host without a report is not a difference in checks")
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestRunDoctorOverLoopback runs 6 ranks as goroutines: rank 0 gathers,
// rank 4's doctor fails, rank 5 never starts.
func TestRunDoctorOverLoopback(t *testing.T) {
	addr := freeAddr(t)
	const size = 6
	opt := Options{Join: 3 * time.Second, Message: 2 * time.Second}
	var wg sync.WaitGroup
	for r := 1; r < size-1; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opt
			o.Hostname = fmt.Sprintf("gpu%d", r)
			doc := func(context.Context) (*erdma.Report, error) {
				if r == 4 {
					return nil, errors.New("cannot read sys/class/infiniband")
				}
				f := ok("mtu-consistent")
				if r == 2 {
					f = health.Finding{ID: "mtu-consistent", Severity: health.Warn, Summary: "eth1 MTU 1500"}
				}
				return report(f.Severity, f), nil
			}
			me, _ := NewRank(r, size, "test")
			fr, err := RunDoctor(context.Background(), me, addr, doc, o)
			assert.NoError(t, err)
			assert.Nil(t, fr)
		}()
	}
	me, _ := NewRank(0, size, "test")
	o := opt
	o.Hostname = "gpu0"
	fr, err := RunDoctor(context.Background(), me, addr, func(context.Context) (*erdma.Report, error) {
		return report(health.OK, ok("mtu-consistent")), nil
	}, o)
	require.NoError(t, err)
	wg.Wait()
	assert.Equal(t, health.Fail, fr.Status)
	assert.Equal(t, []string{"gpu0", "gpu1", "gpu3"}, fr.ByStatus["ok"])
	assert.Equal(t, []string{"gpu2"}, fr.ByStatus["warn"])
	assert.Equal(t, []string{"gpu4"}, fr.ByStatus["error"])
	assert.Equal(t, []string{"rank 5"}, fr.ByStatus["missing"])
	require.Len(t, fr.Differences, 1)
	assert.Equal(t, []string{"gpu2"}, fr.Differences[0].Groups[0].Hosts)
	// Issue 27 items 11 and 17: lists are [], never null or absent, on the
	// path a job takes (no rendezvous errors; hosts with no problems, an
	// errored host, a missing one).
	b, err := json.Marshal(fr)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"errors":[]`)
	var doc struct {
		Hosts []map[string]json.RawMessage `json:"hosts"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Hosts, size)
	for _, h := range doc.Hosts {
		assert.Contains(t, h, "problems", "%s", h["host"])
		assert.NotEqual(t, "null", string(h["problems"]), "%s", h["host"])
	}
}

func TestGatherRefusesGarbageAndDuplicates(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	var (
		g    *gathering
		gerr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g, gerr = gather(context.Background(), l, 3, 2*time.Second, time.Second, nil)
	}()
	// Garbage.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	defer c.Close()
	// A silent connection (slowloris) must not hold the gathering.
	s, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer s.Close()
	// A good member and a duplicate.
	c1, err := join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "a"}, time.Second, time.Second, nil)
	require.NoError(t, err)
	defer c1.Close()
	_, err = join(context.Background(), addr, helloMsg{Rank: 1, Size: 3, Host: "b"}, time.Second, time.Second, nil)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "joined twice")
	// A member that disagrees on the size.
	_, err = join(context.Background(), addr, helloMsg{Rank: 2, Size: 4, Host: "c"}, time.Second, time.Second, nil)
	require.ErrorAs(t, err, &pe)

	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Gather hung")
	}
	require.NoError(t, gerr)
	assert.Len(t, g.Members, 1)
	assert.Equal(t, []int{2}, g.Missing)
	assert.GreaterOrEqual(t, len(g.Errors), 3, "%v", g.Errors)
	require.NoError(t, g.Close())
}

func TestJoinGivesUpWhenRankZeroNeverListens(t *testing.T) {
	start := time.Now()
	_, err := join(context.Background(), freeAddr(t), helloMsg{Rank: 1, Size: 2}, 300*time.Millisecond, time.Second, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not reach rank 0")
	assert.Less(t, time.Since(start), 3*time.Second)
}

// TestAggregateListsNeverNull: hosts that agree gave "differences": null,
// so jq '.differences[]' failed.
func TestAggregateListsNeverNull(t *testing.T) {
	fr := Aggregate(1, nil, nil)
	b, err := json.Marshal(fr)
	require.NoError(t, err)
	for _, k := range []string{`"differences":[]`, `"errors":[]`, `"hosts":[]`} {
		assert.Contains(t, string(b), k)
	}
}

// A host's status is a HostState: its doctor's severity or why it has
// none, each counting for the fleet's status as documented, and its JSON
// words are the documented ones.
func TestHostStateHasTheDocumentedWords(t *testing.T) {
	fr := Aggregate(4, []HostReport{
		{Rank: 0, Host: "a", Report: report(health.Warn, health.Finding{ID: "mtu", Severity: health.Warn})},
		{Rank: 1, Host: "b", Error: "doctor: no root"},
	}, []int{2})
	fr.markNotReached([]int{3})
	var got []HostState
	for _, h := range fr.Hosts {
		got = append(got, h.Status)
	}
	assert.Equal(t, []HostState{HostWarn, Errored, Missing, NotReached}, got)
	assert.Equal(t, health.Fail, fr.Status, "an errored or missing host fails the fleet")
	for s, want := range map[HostState]health.Severity{HostOK: health.OK, HostWarn: health.Warn, HostFail: health.Fail,
		Missing: health.Fail, Errored: health.Fail, NotReached: health.Skip, "bogus": health.Fail} {
		assert.Equal(t, want, s.Severity(), "%s counts as %s", s, want)
	}
	for _, s := range []HostState{Missing, Errored, NotReached} {
		assert.Less(t, HostWarn.Order(), s.Order(), "%s is listed above warn", s)
		assert.Less(t, s.Order(), HostFail.Order(), "%s is listed below fail", s)
		assert.Equal(t, HostFail, WorseState(s, HostFail))
		assert.Equal(t, s, WorseState(HostWarn, s))
	}
	b, err := json.Marshal(fr)
	require.NoError(t, err)
	for _, want := range []string{`"status":"warn"`, `"status":"error"`, `"status":"missing"`, `"status":"not reached"`,
		`"by_status":{"error":["b"],"missing":["rank 2"],"not reached":["rank 3"],"warn":["a"]}`} {
		assert.Contains(t, string(b), want)
	}
}

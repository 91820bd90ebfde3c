package eri_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changing returns the accepted requests that change something (not a
// Describe*).
func changing(f *ecsfake.Server) []string {
	var out []string
	for _, r := range f.Requests() {
		if !strings.HasPrefix(r.Action, "Describe") {
			out = append(out, r.Action)
		}
	}
	return out
}

// TestRerunMakesNoChangingCall: two ERIs on distinct cards, then a rerun
// (Plan and Attach) that makes no changing call and says so (issue 25).
func TestRerunMakesNoChangingCall(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	ctx := context.Background()
	res, err := c.Attach(ctx, target, fastAttach(2))
	require.NoError(t, err)
	assert.True(t, res.Complete)
	assert.Equal(t, []string{"CreateNetworkInterface", "AttachNetworkInterface", "CreateNetworkInterface", "AttachNetworkInterface"},
		changing(f))
	require.Len(t, res.Made, 4, "the calls made, each once")
	for _, m := range res.Made {
		assert.Equal(t, "ok", m.Result)
	}
	assert.Equal(t, "now 2 ERI(s) attached, 2 wanted", res.Summary())

	before := len(changing(f))
	res, err = c.Attach(ctx, target, fastAttach(0))
	require.NoError(t, err)
	assert.Empty(t, res.Plan.Steps)
	assert.Empty(t, res.Made)
	assert.Len(t, res.ERIs, 2)
	assert.Equal(t, before, len(changing(f)), "a rerun changes nothing")
}

// TestQueuePairShares: each new ERI gets its share of the instance's
// budget, as the erdma-controller computes it (QueuePairNumber x ERI
// cards on a GPU type, less what attached ERIs hold).
func TestQueuePairShares(t *testing.T) {
	f, url := newFake(t)
	one := 1
	f.AddENI(ecsfake.ENI{ID: "eni-old", MAC: "00:16:3e:00:00:09", Type: "Secondary", Mode: "HighPerformance",
		Status: "InUse", InstanceID: testInst, CardIndex: one, DeviceIndex: 1, QueuePairNumber: 6, VSwitchID: "vsw-fake"})
	c := newClient(t, url)
	plan, err := c.Plan(context.Background(), target, eri.AttachOptions{Count: 2})
	require.NoError(t, err)
	assert.Equal(t, 16, plan.QueuePairBudget, "8 per card, 2 cards")
	assert.Equal(t, 6, plan.QueuePairsUsed)
	require.Len(t, plan.Steps, 1)
	assert.Equal(t, 10, plan.Steps[0].QueuePairNumber)
	assert.Equal(t, 0, plan.Steps[0].CardIndex)
	assert.Equal(t, "10", plan.Steps[0].Calls[0].Params["QueuePairNumber"])

	assert.Equal(t, 16, eri.QueuePairBudget(eri.TypeInfo{QueuePairNumber: 8, NetworkCardQuantity: 2, EriQuantity: 2, GPUAmount: 8}))
	assert.Equal(t, 8, eri.QueuePairBudget(eri.TypeInfo{QueuePairNumber: 8, NetworkCardQuantity: 2, EriQuantity: 2}))
	assert.Equal(t, 8, eri.QueuePairBudget(eri.TypeInfo{QueuePairNumber: 8, NetworkCardQuantity: 1, EriQuantity: 1, GPUAmount: 1}))
}

// TestQuotaExhausted: no queue pairs left, or the account's ENI quota:
// a clear message, ErrQuota, nothing left behind.
func TestQuotaExhausted(t *testing.T) {
	t.Run("queue pairs", func(t *testing.T) {
		f, url := newFake(t)
		f.AddENI(ecsfake.ENI{ID: "eni-greedy", MAC: "00:16:3e:00:00:09", Type: "Secondary", Mode: "HighPerformance",
			Status: "InUse", InstanceID: testInst, CardIndex: 1, DeviceIndex: 1, QueuePairNumber: 16, VSwitchID: "vsw-fake"})
		c := newClient(t, url)
		_, err := c.Attach(context.Background(), target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrQuota)
		assert.Contains(t, err.Error(), "no queue pairs left for 1 more ERI(s): the instance's budget is 16")
		assert.Empty(t, changing(f))
	})
	t.Run("account ENI quota", func(t *testing.T) {
		f, url := newFake(t)
		f.Fail("CreateNetworkInterface", ecsfake.Fault{Code: "QuotaExceed.PortableNetworkInterface", Status: 400})
		c := newClient(t, url)
		res, err := c.Attach(context.Background(), target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrQuota)
		assert.Contains(t, err.Error(), "CreateNetworkInterface: QuotaExceed.PortableNetworkInterface (HTTP 400): "+
			"The maximum number of network interfaces is exceeded.")
		assert.Contains(t, err.Error(), "quota exceeded")
		require.Len(t, res.Made, 1)
		assert.True(t, strings.HasPrefix(res.Made[0].Result, "error: "))
		assert.Empty(t, res.Unattached)
		assert.False(t, res.Complete)
	})
}

// TestTransientAttachErrors: a 503 on AttachNetworkInterface used to exit
// 2 and leave the created ENI unattached. Now it is retried; an attach
// whose answer was lost but which took effect is recognised; one that
// fails for good names the ENI left and how to delete it, and the result
// lists only the calls made (issue 27 item 13).
func TestTransientAttachErrors(t *testing.T) {
	t.Run("503 once is retried", func(t *testing.T) {
		f, url := newFake(t)
		f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503, Times: 1})
		c := newClient(t, url)
		res, err := c.Attach(context.Background(), target, fastAttach(2))
		require.NoError(t, err)
		assert.Len(t, res.ERIs, 2)
		assert.True(t, res.Complete)
	})
	t.Run("503 after the attach took effect", func(t *testing.T) {
		f, url := newFake(t)
		f.ApplyThenFail = true
		f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503, Times: 3})
		c := newClient(t, url)
		res, err := c.Attach(context.Background(), target, fastAttach(2))
		require.NoError(t, err)
		assert.Len(t, res.ERIs, 2)
		assert.Empty(t, res.Unattached)
		assert.Equal(t, 2, f.Count("CreateNetworkInterface"))
	})
	t.Run("fails for good", func(t *testing.T) {
		f, url := newFake(t)
		f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503})
		c := newClient(t, url)
		res, err := c.Attach(context.Background(), target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrUnavailable)
		require.NotNil(t, res)
		assert.False(t, res.Complete)
		require.Len(t, res.Made, 2, "one create, one attach: not the calls of the second step")
		assert.Equal(t, "CreateNetworkInterface", res.Made[0].Action)
		assert.Equal(t, "ok", res.Made[0].Result)
		assert.Equal(t, "eni-fake0001", res.Made[0].Params["NetworkInterfaceId"])
		assert.Equal(t, "AttachNetworkInterface", res.Made[1].Action)
		assert.Contains(t, res.Made[1].Result, "error: ServiceUnavailable (HTTP 503): The request has failed")
		require.Len(t, res.Unattached, 1)
		assert.Equal(t, "eni-fake0001", res.Unattached[0].ID)
		assert.Equal(t, "aliyun ecs DeleteNetworkInterface --RegionId cn-hangzhou --NetworkInterfaceId eni-fake0001", res.Unattached[0].Delete)
		assert.Equal(t, "now 0 ERI(s) attached, 2 wanted; 1 ENI(s) of erdmakit's not attached", res.Summary())

		// The endpoint recovers: the rerun attaches the one left, creates one more.
		f.ClearFaults()
		res, err = c.Attach(context.Background(), target, fastAttach(2))
		require.NoError(t, err)
		assert.Len(t, res.ERIs, 2)
		assert.Equal(t, eri.StepAttach, res.Plan.Steps[0].Kind)
		assert.Equal(t, "eni-fake0001", res.Plan.Steps[0].ENIID)
		assert.Equal(t, 2, f.Count("CreateNetworkInterface"), "never a third ERI")
		assert.Equal(t, "now 2 ERI(s) attached, 2 wanted", res.Summary())
	})
}

// TestClientTokenHasANonce: a deterministic token reused after its ENI was
// deleted may return the deleted ENI; each run's tokens carry its nonce,
// and a rerun adopts an unattached ENI by tag, not by token (issue 25).
func TestClientTokenHasANonce(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	ctx := context.Background()
	_, err := c.Attach(ctx, target, eri.AttachOptions{Count: 1, Nonce: "run1", Wait: fastAttach(1).Wait, Poll: fastAttach(1).Poll})
	require.NoError(t, err)
	var first string
	for _, r := range f.Requests() {
		if r.Action == "CreateNetworkInterface" {
			first = r.Params.Get("ClientToken")
		}
	}
	assert.Equal(t, "erdmakit-"+testInst+"-eri-0-run1", first)

	// Someone detaches and deletes the ERI; a new run must create a new one.
	for _, e := range f.ENIs() {
		if e.Mode == "HighPerformance" {
			f.DeleteENI(e.ID)
		}
	}
	p1, err := c.Plan(ctx, target, eri.AttachOptions{Count: 1})
	require.NoError(t, err)
	p2, err := c.Plan(ctx, target, eri.AttachOptions{Count: 1})
	require.NoError(t, err)
	assert.NotEqual(t, p1.Nonce, p2.Nonce, "a random nonce per run")
	assert.Len(t, p1.Nonce, 8)
	res, err := c.Apply(ctx, p1, fastAttach(1))
	require.NoError(t, err)
	require.Len(t, res.ERIs, 1)
	assert.Equal(t, "eni-fake0002", res.ERIs[0].ID, "a new ENI, not the deleted one")
}

// TestSharedCardPlannedAndFixed: two ERIs on one card used to get "nothing
// to do"; now the plan moves one to the free card, which needs the
// instance stopped: refused (no changing call) while it runs, done when it
// is stopped (issue 25, issue 27 item 12).
func TestSharedCardPlannedAndFixed(t *testing.T) {
	f, url := newFake(t)
	for i, id := range []string{"eni-a", "eni-b"} {
		f.AddENI(ecsfake.ENI{ID: id, MAC: "00:16:3e:00:00:1" + string(rune('0'+i)), Type: "Secondary", Mode: "HighPerformance",
			Status: "InUse", InstanceID: testInst, CardIndex: 0, DeviceIndex: i + 1, QueuePairNumber: 8, VSwitchID: "vsw-fake"})
	}
	c := newClient(t, url)
	ctx := context.Background()

	dry, err := c.Attach(ctx, target, eri.AttachOptions{DryRun: true})
	require.NoError(t, err)
	p := dry.Plan
	assert.Equal(t, 2, p.Have)
	assert.True(t, p.NeedsStopped)
	require.Len(t, p.Steps, 1)
	assert.Equal(t, eri.StepMove, p.Steps[0].Kind)
	assert.Equal(t, "eni-b", p.Steps[0].ENIID)
	assert.Equal(t, 1, p.Steps[0].CardIndex)
	assert.Equal(t, []string{"DetachNetworkInterface", "AttachNetworkInterface"}, []string{p.Steps[0].Calls[0].Action, p.Steps[0].Calls[1].Action})
	require.Len(t, p.Notes, 1)
	assert.Contains(t, p.Notes[0], "ERIs eni-a and eni-b share NetworkCardIndex 0")
	assert.Contains(t, p.Notes[0], "the instance must be stopped first; the primary ENI cannot be detached")

	res, err := c.Attach(ctx, target, fastAttach(0))
	require.ErrorIs(t, err, eri.ErrNeedsStopped)
	assert.Contains(t, err.Error(), testInst+" is Running")
	assert.Empty(t, res.Made)
	assert.Empty(t, changing(f))

	f.SetInstance(testInst, ecsfake.Instance{Status: "Stopped"})
	res, err = c.Attach(ctx, target, fastAttach(0))
	require.NoError(t, err)
	assert.True(t, res.Complete)
	assert.Equal(t, []string{"DetachNetworkInterface", "AttachNetworkInterface"}, changing(f))
	cards := map[string]int{}
	for _, e := range res.ERIs {
		cards[e.ID] = *e.NetworkCardIndex
	}
	assert.Equal(t, map[string]int{"eni-a": 0, "eni-b": 1}, cards)

	v, err := c.Describe(ctx, target)
	require.NoError(t, err)
	assert.Equal(t, health.OK, eri.ChannelFinding(v).Severity)
}

// TestOneSeverityForASharedCard: eri status and the doctor judged two ERIs
// on one card warn and fail; both now take the doctor's finding, whose
// remedy says what the guide says about detaching (issue 27 item 12).
func TestOneSeverityForASharedCard(t *testing.T) {
	zero := 0
	v := &eri.View{Target: target, ENIs: []eri.ENI{
		{ID: "eni-a", TrafficMode: eri.ModeHighPerformance, InstanceID: testInst, NetworkCardIndex: &zero},
		{ID: "eni-b", TrafficMode: eri.ModeHighPerformance, InstanceID: testInst, NetworkCardIndex: &zero},
	}}
	st := eri.Match(v, nil)
	doc := eri.ChannelFinding(v)
	assert.Equal(t, health.Fail, doc.Severity)
	assert.Equal(t, doc.Severity, st.Worst())
	assert.Equal(t, doc, st.Findings()[0])
	assert.Contains(t, doc.Remediation, "stop the instance first")
	assert.Contains(t, doc.Remediation, "the primary ENI cannot be detached")
}

// TestTerwayExclusion: on a Kubernetes node with Terway, new ERIs carry
// the tag that keeps Terway from handing their addresses to pods.
func TestTerwayExclusion(t *testing.T) {
	root := t.TempDir()
	h, closer, err := erdma.OpenHost(t.Context(), root)
	require.NoError(t, err)
	defer closer.Close()
	found, _ := eri.DetectTerway(t.Context(), h)
	assert.False(t, found)
	assert.False(t, eri.AttachOptionsFor(t.Context(), h).TerwayExclude)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/cni/net.d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/cni/net.d/10-terway.conflist"), []byte(`{"name":"terway"}`), 0o644))
	found, ev := eri.DetectTerway(t.Context(), h)
	assert.True(t, found)
	assert.Contains(t, ev, "10-terway.conflist")

	f, url := newFake(t)
	c := newClient(t, url)
	opt := fastAttach(1)
	opt.TerwayExclude = eri.AttachOptionsFor(t.Context(), h).TerwayExclude
	require.True(t, opt.TerwayExclude, "a Terway node: the options start with the tag")
	_, err = c.Attach(context.Background(), target, opt)
	require.NoError(t, err)
	for _, e := range f.ENIs() {
		if e.Mode == "HighPerformance" {
			assert.Equal(t, "true", e.Tags[eri.TagTerwayExcluded])
		}
	}
}

// TestInterruptedApplyNamesWhatItCreated: cancelled while waiting for the
// attach, Apply returns at once and still names the ENI it created.
func TestInterruptedApplyNamesWhatItCreated(t *testing.T) {
	f, url := newFake(t)
	f.AttachDescribes = 1 << 30 // never InUse
	c := newClient(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	opt := eri.AttachOptions{Count: 1, Wait: time.Minute, Poll: 10 * time.Millisecond,
		Progress: func(s string) {
			if strings.Contains(s, "waiting for InUse") {
				cancel()
			}
		}}
	start := time.Now()
	res, err := c.Attach(ctx, target, opt)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second)
	assert.False(t, res.Complete)
	require.Len(t, res.Made, 2)
	assert.Equal(t, "ok", res.Made[1].Result, "the attach call was made")
	assert.Contains(t, res.Summary(), "now ")
}

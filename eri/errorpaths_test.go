package eri_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The error paths of attach, convert and configure against the fake ECS
// (issue 26 item 5): each failure names what failed and wraps the error a
// caller can test with errors.Is, and an attach that fails midway says
// what exists now.

// fakeWith is a fake of one instance type (EriQuantity eris, the given
// cards, qps queue pairs, 8 GPUs) holding enis; no primary unless given.
func fakeWith(t *testing.T, eris int, cards []int, qps int, enis ...ecsfake.ENI) (*ecsfake.Server, *eri.Client) {
	t.Helper()
	f := &ecsfake.Server{AccessKeyID: testAK, AccessKeySecret: testSecret, AttachDescribes: 1,
		Types: map[string]ecsfake.Type{testType: {ID: testType, EriQuantity: eris, Cards: cards,
			GPUAmount: 8, GPUSpec: "NVIDIA L20", BandwidthRx: 160000000, QPs: qps}}}
	for _, e := range enis {
		f.AddENI(e)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, newClient(t, srv.URL)
}

func primaryENI() ecsfake.ENI {
	return ecsfake.ENI{ID: "eni-primary", MAC: "00:16:3E:00:00:01", Type: "Primary", Mode: "Standard",
		IP: "10.0.1.2", Status: "InUse", InstanceID: testInst, VSwitchID: "vsw-fake", SecurityGroups: []string{"sg-fake"}}
}

// eriOn is an attached ERI of the instance on card.
func eriOn(id string, card, qps int) ecsfake.ENI {
	return ecsfake.ENI{ID: id, MAC: "00:16:3e:00:01:0" + id[len(id)-1:], Type: "Secondary", Mode: "HighPerformance",
		Status: "InUse", InstanceID: testInst, CardIndex: card, DeviceIndex: card + 1, VSwitchID: "vsw-fake",
		QueuePairNumber: qps}
}

// failNth serves f, failing the nth request (from 1) of action with fault:
// a describe that works once and fails the second time.
func failNth(t *testing.T, f *ecsfake.Server, action string, n int, fault ecsfake.Fault) *eri.Client {
	t.Helper()
	var mu sync.Mutex
	seen := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-acs-action") == action {
			mu.Lock()
			seen++
			if seen == n {
				fault.Times = 1
				f.Fail(action, fault)
			}
			mu.Unlock()
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return newClient(t, srv.URL)
}

var forbidden = ecsfake.Fault{Code: "Forbidden.RAM", Status: 403}

func TestPlanErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		eris, want int
		cards      []int
		qps        int
		enis       []ecsfake.ENI
		err        error
		says       string
	}{
		"a type without ERIs": {eris: 0, want: 1, cards: []int{0}, qps: 8, enis: []ecsfake.ENI{primaryENI()},
			err: eri.ErrNotSupported, says: testType},
		"more ERIs than free channels": {eris: 3, want: 3, cards: []int{0, 1}, qps: 8, enis: []ecsfake.ENI{primaryENI()},
			err: eri.ErrChannel, says: "3 more ERI(s) wanted, free channels [0 1]"},
		"a shared card and nowhere to move": {eris: 3, want: 3, cards: []int{0, 1}, qps: 8,
			enis: []ecsfake.ENI{primaryENI(), eriOn("eni-a", 0, 2), eriOn("eni-b", 0, 2), eriOn("eni-c", 1, 2)},
			err:  eri.ErrChannel, says: "detach and delete the extra ERI instead"},
		"no primary ENI to copy": {eris: 2, want: 1, cards: []int{0, 1}, qps: 8,
			err: eri.ErrAPI, says: "primary ENI"},
		"queue pairs spent": {eris: 2, want: 2, cards: []int{0, 1}, qps: 8,
			enis: []ecsfake.ENI{primaryENI(), eriOn("eni-a", 0, 16)},
			err:  eri.ErrQuota, says: "no queue pairs left"},
	} {
		t.Run(name, func(t *testing.T) {
			f, c := fakeWith(t, tc.eris, tc.cards, tc.qps, tc.enis...)
			res, err := c.Attach(context.Background(), target, fastAttach(tc.want))
			require.ErrorIs(t, err, tc.err)
			assert.Nil(t, res)
			assert.Contains(t, err.Error(), tc.says)
			for _, r := range f.Requests() {
				assert.True(t, strings.HasPrefix(r.Action, "Describe"), "a plan that fails makes no call: %s", r.Action)
			}
		})
	}
}

// TestPlanWithoutCardList: a type that lists no network cards has one,
// card 0.
func TestPlanWithoutCardList(t *testing.T) {
	_, c := fakeWith(t, 1, nil, 8, primaryENI())
	p, err := c.Plan(context.Background(), target, eri.AttachOptions{Count: 1})
	require.NoError(t, err)
	require.Len(t, p.Steps, 1)
	assert.Equal(t, 0, p.Steps[0].CardIndex)
}

func TestPlanTaggedLookupFails(t *testing.T) {
	f, _ := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
	// The second DescribeNetworkInterfaces is the lookup of ENIs an
	// earlier run created.
	c := failNth(t, f, "DescribeNetworkInterfaces", 2, forbidden)
	_, err := c.Plan(context.Background(), target, eri.AttachOptions{Count: 2})
	require.ErrorIs(t, err, eri.ErrForbidden)
	var ae *eri.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "DescribeNetworkInterfaces", ae.Action)
}

func TestApplyNeedsAPlanFromPlan(t *testing.T) {
	_, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
	res, err := c.Apply(context.Background(), &eri.AttachPlan{}, eri.AttachOptions{})
	require.ErrorIs(t, err, eri.ErrInvalidParameter)
	assert.Empty(t, res.Made)
}

// sharedCard: two ERIs on card 0 and card 1 free: the plan moves one,
// which needs the instance stopped.
func sharedCard(t *testing.T) (*ecsfake.Server, *eri.Client) {
	t.Helper()
	f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI(), eriOn("eni-a", 0, 4), eriOn("eni-b", 0, 4))
	return f, c
}

func TestApplyMoveErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("instance running", func(t *testing.T) {
		f, c := sharedCard(t)
		res, err := c.Attach(ctx, target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrNeedsStopped)
		assert.Contains(t, err.Error(), testInst+" is Running")
		assert.Empty(t, res.Made, "nothing was called")
		assert.Len(t, res.ERIs, 2, "what exists now")
		assert.Zero(t, f.Count("DetachNetworkInterface"))
	})
	t.Run("instance status unreadable", func(t *testing.T) {
		f, c := sharedCard(t)
		f.Fail("DescribeInstanceAttribute", forbidden)
		_, err := c.Attach(ctx, target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrForbidden)
		assert.Zero(t, f.Count("DetachNetworkInterface"))
	})
	t.Run("detach refused", func(t *testing.T) {
		f, c := sharedCard(t)
		f.SetInstance(testInst, ecsfake.Instance{Status: "Stopped"})
		f.Fail("DetachNetworkInterface", ecsfake.Fault{Code: "InvalidParameter", Status: 400})
		res, err := c.Attach(ctx, target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrInvalidParameter)
		require.Len(t, res.Made, 1)
		assert.Equal(t, "DetachNetworkInterface", res.Made[0].Action)
		assert.True(t, strings.HasPrefix(res.Made[0].Result, "error: InvalidParameter (HTTP 400)"), res.Made[0].Result)
		assert.False(t, res.Complete)
	})
	t.Run("status unreadable after the detach", func(t *testing.T) {
		f, _ := sharedCard(t)
		f.SetInstance(testInst, ecsfake.Instance{Status: "Stopped"})
		// Describe (1), the tagged lookup (2), then the wait after the
		// detach (3).
		c := failNth(t, f, "DescribeNetworkInterfaces", 3, forbidden)
		res, err := c.Attach(ctx, target, fastAttach(2))
		require.ErrorIs(t, err, eri.ErrForbidden)
		require.NotEmpty(t, res.Unattached, "the detached ERI is named, with how to look at it")
		assert.Equal(t, "eni-b", res.Unattached[0].ID)
		// Its status was never read back: no one is told to delete it.
		assert.Empty(t, res.Unattached[0].Delete)
		assert.Contains(t, res.Unattached[0].Check, "DescribeNetworkInterfaces")
	})
	t.Run("the move completes", func(t *testing.T) {
		f, c := sharedCard(t)
		f.SetInstance(testInst, ecsfake.Instance{Status: "Stopped"})
		var said []string
		opt := fastAttach(2)
		opt.Progress = func(s string) { said = append(said, s) }
		res, err := c.Attach(ctx, target, opt)
		require.NoError(t, err)
		assert.True(t, res.Complete)
		assert.Contains(t, strings.Join(said, "\n"), "detaching eni-b from NetworkCardIndex 0")
		assert.Equal(t, "now 2 ERI(s) attached, 2 wanted", res.Summary())
	})
}

func TestApplyAttachErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("wait for the attach unreadable", func(t *testing.T) {
		f, _ := fakeWith(t, 1, []int{0}, 8, primaryENI())
		// Describe (1), the tagged lookup (2), the wait after the attach (3).
		c := failNth(t, f, "DescribeNetworkInterfaces", 3, forbidden)
		res, err := c.Attach(ctx, target, fastAttach(1))
		require.ErrorIs(t, err, eri.ErrForbidden)
		require.Len(t, res.Made, 2, "create and attach were made")
		assert.False(t, res.Complete)
	})
	t.Run("attach failed and the read-back fails too", func(t *testing.T) {
		f, _ := fakeWith(t, 1, []int{0}, 8, primaryENI())
		f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "InternalError", Status: 400})
		// Describe (1), tagged (2), the read-back after the failed attach (3).
		c := failNth(t, f, "DescribeNetworkInterfaces", 3, forbidden)
		res, err := c.Attach(ctx, target, fastAttach(1))
		require.Error(t, err)
		var ae *eri.APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "AttachNetworkInterface", ae.Action)
		require.NotEmpty(t, res.Unattached, "the created ENI is named")
	})
	t.Run("dry run says so", func(t *testing.T) {
		_, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
		res, err := c.Attach(ctx, target, eri.AttachOptions{Count: 2, DryRun: true})
		require.NoError(t, err)
		assert.Equal(t, "0 ERI(s) attached, 2 wanted; dry run: no call made", res.Summary())
	})
	t.Run("the endpoint is gone", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c, err := eri.New(eri.Config{Region: testRegion, Endpoint: url, Credential: staticCred(t, testAK, testSecret),
			RetryBase: time.Millisecond, Retries: -1, Timeout: 2 * time.Second})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Attach(ctx, target, fastAttach(1))
		require.Error(t, err)
		assert.False(t, eri.IsRetryable(err), "%v", err)
	})
	t.Run("throttling is retryable", func(t *testing.T) {
		f, c := fakeWith(t, 1, []int{0}, 8, primaryENI())
		f.Fail("DescribeInstanceTypes", ecsfake.Fault{Code: "Throttling.User", Status: 400})
		_, err := c.Attach(ctx, target, fastAttach(1))
		require.ErrorIs(t, err, eri.ErrThrottled)
		assert.True(t, eri.IsRetryable(err))
	})
}

func TestConvertErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("no ENI id", func(t *testing.T) {
		f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
		_, err := c.Convert(ctx, target, "", false)
		require.ErrorIs(t, err, eri.ErrInvalidParameter)
		assert.Empty(t, f.Requests(), "refused before any call")
	})
	t.Run("the ENIs cannot be read", func(t *testing.T) {
		f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
		f.Fail("DescribeNetworkInterfaces", forbidden)
		_, err := c.Convert(ctx, target, "eni-primary", false)
		require.ErrorIs(t, err, eri.ErrForbidden)
		assert.Contains(t, err.Error(), "ecs:DescribeNetworkInterfaces")
	})
	t.Run("already an ERI", func(t *testing.T) {
		f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI(), eriOn("eni-a", 0, 4))
		res, err := c.Convert(ctx, target, "eni-a", false)
		require.NoError(t, err)
		assert.Contains(t, res.Warn, "already HighPerformance: nothing to do")
		assert.Empty(t, res.Call.Action)
		assert.Zero(t, f.Count("ModifyNetworkInterfaceAttribute"))
	})
	t.Run("the switch is refused", func(t *testing.T) {
		f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI(),
			ecsfake.ENI{ID: "eni-second", MAC: "00:16:3e:00:00:02", Type: "Secondary", Mode: "Standard",
				Status: "InUse", InstanceID: testInst, CardIndex: 1, VSwitchID: "vsw-fake"})
		f.Fail("ModifyNetworkInterfaceAttribute", ecsfake.Fault{Code: "InvalidOperation.NotSupported", Status: 400})
		_, err := c.Convert(ctx, target, "eni-second", false)
		require.Error(t, err)
		var ae *eri.APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "ModifyNetworkInterfaceAttribute", ae.Action)
		assert.Equal(t, "InvalidOperation.NotSupported", ae.Code)
	})
}

func TestConfigureRefusesBadOptions(t *testing.T) {
	ctx := context.Background()
	_, err := eri.Configure(ctx, []string{"00:16:3e:00:00:02"}, eri.ConfigureOptions{MTU: 9000, DryRun: true})
	require.ErrorIs(t, err, eri.ErrConfigure)
	assert.Contains(t, err.Error(), "MTU 9000")
	macs := make([]string, 65)
	for i := range macs {
		macs[i] = "00:16:3e:00:00:02"
	}
	_, err = eri.Configure(ctx, macs, eri.ConfigureOptions{DryRun: true})
	require.ErrorIs(t, err, eri.ErrConfigure)
	assert.Contains(t, err.Error(), "65 MACs")
}

// TestConfigureUnknownMAC: a MAC no netdev has (here: on this machine's
// links, read only; a dry run) is an error naming it, in the result too.
func TestConfigureUnknownMAC(t *testing.T) {
	const mac = "02:00:5e:ff:fe:01" // locally administered, never a real NIC's
	res, err := eri.Configure(context.Background(), []string{strings.ToUpper(mac)}, eri.ConfigureOptions{DryRun: true, MTU: eri.MTUSmall})
	require.ErrorIs(t, err, eri.ErrConfigure)
	require.Len(t, res, 1)
	assert.Equal(t, mac, res[0].MAC)
	assert.Contains(t, res[0].Error, "no netdev with MAC "+mac)
	assert.True(t, errors.Is(err, eri.ErrConfigure))
}

// TestApplyRecordsATransportFailure: the attach's connection is cut (no
// answer at all): the call is recorded with the error on one line, and
// the ENI it created is named as left unattached.
func TestApplyRecordsATransportFailure(t *testing.T) {
	f, _ := fakeWith(t, 1, []int{0}, 8, primaryENI())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-acs-action") == "AttachNetworkInterface" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := eri.New(eri.Config{Region: testRegion, Endpoint: srv.URL, Credential: staticCred(t, testAK, testSecret),
		RetryBase: time.Millisecond, Retries: -1, Timeout: 2 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Attach(context.Background(), target, fastAttach(1))
	require.Error(t, err)
	require.Len(t, res.Made, 2)
	assert.Equal(t, "AttachNetworkInterface", res.Made[1].Action)
	assert.True(t, strings.HasPrefix(res.Made[1].Result, "error: "), res.Made[1].Result)
	assert.NotContains(t, res.Made[1].Result, "\n", "one line")
	require.Len(t, res.Unattached, 1)
	assert.Equal(t, "available", strings.ToLower(res.Unattached[0].Status))
	assert.Contains(t, res.Made[1].String(), "AttachNetworkInterface InstanceId="+testInst)
}

// TestOptionalNumbersPrint: issue 26 item 5. An ENI's card and device and
// a step's former card are optional (pointers, for the JSON's omitempty):
// %v prints them as numbers or "?", never an address.
func TestOptionalNumbersPrint(t *testing.T) {
	one, two := 1, 2
	e := eri.ENI{ID: "eni-b", Type: "Secondary", TrafficMode: eri.ModeHighPerformance, Status: eri.StatusInUse,
		NetworkCardIndex: &one, DeviceIndex: &two, IP: "10.0.1.3"}
	assert.Equal(t, "eni-b Secondary HighPerformance InUse card 1 device 2 10.0.1.3", fmt.Sprintf("%v", e))
	assert.Equal(t, "eni-c Secondary Standard Available card ? device ?",
		fmt.Sprint(eri.ENI{ID: "eni-c", Type: "Secondary", TrafficMode: eri.ModeStandard, Status: eri.StatusAvailable}))
	zero := 0
	assert.Equal(t, "move eni-b card 0 -> 1", fmt.Sprint(eri.Step{Kind: eri.StepMove, ENIID: "eni-b", CardIndex: 1, FromCardIndex: &zero}))
	assert.Equal(t, "create <new ERI> card 1", fmt.Sprint(eri.Step{Kind: eri.StepCreate, Create: true, CardIndex: 1}))
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"network_card_index":1,"device_index":2`, "the JSON is unchanged")
}

// TestUnknownActionIsNotAParameter: an endpoint that does not know the
// action (InvalidAction.NotFound) says so, not "refused a parameter".
func TestUnknownActionIsNotAParameter(t *testing.T) {
	f, c := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
	f.Fail("DescribeInstanceTypes", ecsfake.Fault{Code: "InvalidAction.NotFound", Status: 404, Times: 1})
	_, err := c.Plan(context.Background(), target, eri.AttachOptions{Count: 1})
	require.ErrorIs(t, err, eri.ErrUnknownAction)
	assert.NotErrorIs(t, err, eri.ErrInvalidParameter)
	assert.Contains(t, err.Error(), "does not know this action")
}

// TestInUseENIIsNeverAdvisedDeleted: a server that ignores the Status
// filter answers with the ERI this run attached (InUse); the failed run
// names only what it read back Available, and no delete for an ENI in use.
func TestInUseENIIsNeverAdvisedDeleted(t *testing.T) {
	f, _ := fakeWith(t, 2, []int{0, 1}, 8, primaryENI())
	f.IgnoreStatusFilter = true
	c := failNth(t, f, "CreateNetworkInterface", 2, forbidden)
	res, err := c.Attach(context.Background(), target, fastAttach(2))
	require.ErrorIs(t, err, eri.ErrForbidden)
	require.Len(t, res.ERIs, 1, "the first ERI is attached")
	for _, u := range res.Unattached {
		assert.NotEqual(t, res.ERIs[0].ID, u.ID, "an ERI in use is not called unattached: %+v", u)
	}
}

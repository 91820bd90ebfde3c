package eri_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/credentials-go/credentials"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testAK     = "LTAI5tFakeKeyForTests"
	testSecret = "fake-secret-never-real"
	testInst   = "i-fake0001"
	testType   = "ecs.ebmgn8is.32xlarge"
	testRegion = "cn-hangzhou"
)

var target = eri.Target{Region: testRegion, InstanceID: testInst, InstanceType: testType}

// newFake is a fresh instance with one Standard primary ENI.
func newFake(t *testing.T) (*ecsfake.Server, string) {
	t.Helper()
	f := &ecsfake.Server{AccessKeyID: testAK, AccessKeySecret: testSecret, AttachDescribes: 1,
		Types: map[string]ecsfake.Type{testType: {ID: testType, EriQuantity: 2, Cards: []int{0, 1},
			GPUAmount: 8, GPUSpec: "NVIDIA L20", BandwidthRx: 160000000, QPs: 8}}}
	f.AddENI(ecsfake.ENI{ID: "eni-primary", MAC: "00:16:3E:00:00:01", Type: "Primary", Mode: "Standard",
		IP: "10.0.1.2", Status: "InUse", InstanceID: testInst, VSwitchID: "vsw-fake", SecurityGroups: []string{"sg-fake"}})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func staticCred(t *testing.T, ak, secret string) credentials.Credential {
	t.Helper()
	c, err := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"),
		AccessKeyId: tea.String(ak), AccessKeySecret: tea.String(secret)})
	require.NoError(t, err)
	return c
}

func newClient(t *testing.T, url string) *eri.Client {
	t.Helper()
	c, err := eri.New(eri.Config{Region: testRegion, Endpoint: url, Credential: staticCred(t, testAK, testSecret),
		RetryBase: time.Millisecond, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func fastAttach(n int) eri.AttachOptions {
	return eri.AttachOptions{Count: n, Wait: 5 * time.Second, Poll: time.Millisecond}
}

// TestAttachScenario: fresh instance -> attach 2 -> two tagged ERIs on
// channels 0 and 1; a rerun does nothing.
func TestAttachScenario(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	ctx := context.Background()

	res, err := c.Attach(ctx, target, fastAttach(2))
	require.NoError(t, err)
	require.Len(t, res.ERIs, 2)
	cards := map[int]bool{}
	for _, e := range res.ERIs {
		require.NotNil(t, e.NetworkCardIndex)
		cards[*e.NetworkCardIndex] = true
		assert.Equal(t, eri.StatusInUse, e.Status)
		assert.Equal(t, testInst, e.Tags[eri.TagInstance])
		assert.Equal(t, "erdmakit", e.Tags[eri.TagCreator])
	}
	assert.Equal(t, map[int]bool{0: true, 1: true}, cards)
	assert.Equal(t, 2, f.Count("CreateNetworkInterface"))
	for _, r := range f.Requests() {
		if r.Action == "CreateNetworkInterface" {
			assert.Equal(t, "HighPerformance", r.Params.Get("NetworkInterfaceTrafficMode"))
			assert.Equal(t, "vsw-fake", r.Params.Get("VSwitchId"))
			assert.Equal(t, "sg-fake", r.Params.Get("SecurityGroupIds.1"))
			assert.Equal(t, "8", r.Params.Get("QueuePairNumber"))
		}
	}

	res, err = c.Attach(ctx, target, fastAttach(0))
	require.NoError(t, err)
	assert.Empty(t, res.Plan.Steps, "a rerun plans nothing")
	assert.Equal(t, 2, f.Count("CreateNetworkInterface"), "a rerun creates nothing")
	assert.Equal(t, 2, f.Count("AttachNetworkInterface"))
}

// TestAttachResumesAfterFailure: the attach fails after the create; the
// rerun attaches the tagged ENI and never makes a third ERI.
func TestAttachResumesAfterFailure(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	ctx := context.Background()
	f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "InvalidParameter", Status: 400, Times: 1})

	_, err := c.Attach(ctx, target, fastAttach(2))
	require.ErrorIs(t, err, eri.ErrInvalidParameter)
	assert.Equal(t, 1, f.Count("CreateNetworkInterface"))

	res, err := c.Attach(ctx, target, fastAttach(2))
	require.NoError(t, err)
	assert.Len(t, res.ERIs, 2)
	assert.Equal(t, 2, f.Count("CreateNetworkInterface"), "the first ENI was reused, one more created")
	n := 0
	for _, e := range f.ENIs() {
		if e.Mode == "HighPerformance" {
			n++
		}
	}
	assert.Equal(t, 2, n, "never a third ERI")
}

func TestAttachDryRunMakesNoMutatingCall(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	res, err := c.Attach(context.Background(), target, eri.AttachOptions{DryRun: true})
	require.NoError(t, err)
	require.Len(t, res.Plan.Steps, 2)
	assert.Equal(t, "CreateNetworkInterface", res.Plan.Steps[0].Calls[0].Action)
	assert.Equal(t, "1", res.Plan.Steps[1].Calls[1].Params["NetworkCardIndex"])
	for _, r := range f.Requests() {
		assert.True(t, strings.HasPrefix(r.Action, "Describe"), "dry-run made %s", r.Action)
	}
}

func TestAttachErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		action string
		fault  ecsfake.Fault
		want   error
	}{
		"forbidden":          {"DescribeInstanceTypes", ecsfake.Fault{Code: "Forbidden.RAM", Status: 403}, eri.ErrForbidden},
		"throttled for good": {"DescribeNetworkInterfaces", ecsfake.Fault{Code: "Throttling.User", Status: 400}, eri.ErrThrottled},
		"quota":              {"CreateNetworkInterface", ecsfake.Fault{Code: "QuotaExceed.Eri", Status: 400}, eri.ErrQuota},
		"invalid parameter":  {"AttachNetworkInterface", ecsfake.Fault{Code: "InvalidParameter", Status: 400}, eri.ErrInvalidParameter},
	} {
		t.Run(name, func(t *testing.T) {
			f, url := newFake(t)
			c := newClient(t, url)
			f.Fail(tc.action, tc.fault)
			_, err := c.Attach(context.Background(), target, fastAttach(2))
			require.ErrorIs(t, err, tc.want)
			var ae *eri.APIError
			require.True(t, errors.As(err, &ae), "%v", err)
			assert.Equal(t, tc.action, ae.Action)
			assert.Equal(t, tc.fault.Code, ae.Code)
			if tc.want == eri.ErrForbidden {
				assert.Contains(t, err.Error(), "ecs:AttachNetworkInterface", "the message lists the policy")
			}
		})
	}
}

func TestThrottlingRetriedThenSucceeds(t *testing.T) {
	f, url := newFake(t)
	c := newClient(t, url)
	f.Fail("DescribeInstanceTypes", ecsfake.Fault{Code: "Throttling.User", Status: 400, Times: 2})
	v, err := c.Describe(context.Background(), target)
	require.NoError(t, err)
	assert.Equal(t, 2, v.TypeInfo.EriQuantity)
	assert.Equal(t, []int{0, 1}, v.TypeInfo.NetworkCardIndexes)
}

func TestWrongSecretIsRefused(t *testing.T) {
	_, url := newFake(t)
	c, err := eri.New(eri.Config{Region: testRegion, Endpoint: url, Credential: staticCred(t, testAK, "wrong"),
		Retries: -1})
	require.NoError(t, err)
	_, err = c.Describe(context.Background(), target)
	var ae *eri.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "IncompleteSignature", ae.Code)
}

func TestAttachTimeout(t *testing.T) {
	f, url := newFake(t)
	f.AttachDescribes = 1 << 30
	c := newClient(t, url)
	_, err := c.Attach(context.Background(), target, eri.AttachOptions{Count: 1, Wait: 20 * time.Millisecond, Poll: time.Millisecond})
	require.ErrorIs(t, err, eri.ErrAttachTimeout)
}

func TestAttachRefusesBeyondTheType(t *testing.T) {
	_, url := newFake(t)
	c := newClient(t, url)
	_, err := c.Attach(context.Background(), target, fastAttach(3))
	require.ErrorIs(t, err, eri.ErrQuota)
}

func TestConvert(t *testing.T) {
	f, url := newFake(t)
	f.AddENI(ecsfake.ENI{ID: "eni-second", MAC: "00:16:3e:00:00:02", Type: "Secondary", Mode: "Standard",
		Status: "InUse", InstanceID: testInst, CardIndex: 0, VSwitchID: "vsw-fake"})
	f.AddENI(ecsfake.ENI{ID: "eni-eri", MAC: "00:16:3e:00:00:03", Type: "Secondary", Mode: "HighPerformance",
		Status: "InUse", InstanceID: testInst, CardIndex: 0, VSwitchID: "vsw-fake"})
	c := newClient(t, url)
	ctx := context.Background()

	res, err := c.Convert(ctx, target, "eni-second", true)
	require.NoError(t, err)
	assert.Contains(t, res.Warn, "already used by ERI eni-eri")
	assert.Equal(t, 0, f.Count("ModifyNetworkInterfaceAttribute"))

	_, err = c.Convert(ctx, target, "eni-second", false)
	require.NoError(t, err)
	req := f.Requests()[len(f.Requests())-1]
	assert.Equal(t, "ModifyNetworkInterfaceAttribute", req.Action)
	v, err := c.Describe(ctx, target)
	require.NoError(t, err)
	assert.Len(t, v.ERIs(), 2)
	assert.Equal(t, map[int][]string{0: {"eni-second", "eni-eri"}}, v.SharedChannels())

	_, err = c.Convert(ctx, target, "eni-elsewhere", false)
	require.ErrorIs(t, err, eri.ErrInvalidParameter)
}

func TestPolicyJSONListsEveryAction(t *testing.T) {
	p := eri.PolicyJSON()
	for _, a := range eri.Actions() {
		assert.Contains(t, p, `"`+a+`"`)
	}
}

package doctor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
)

// The figure `bw` expects comes from the instance the doctor decides: the
// option first, else the recording; unknown types give 0.
func TestExpectedWriteGbpsFollowsTheDoctorsInstance(t *testing.T) {
	h, closer, err := erdma.OpenHost(t.Context(), "../testdata/hosts/ebmgn8is-healthy.tar.gz")
	require.NoError(t, err)
	defer closer.Close()
	ctx := context.Background()

	opt := DefaultOptions()
	opt.InstanceType = "ecs.ebmgn9gc.64xlarge"
	gbps, why := ExpectedWriteGbps(ctx, h, opt)
	assert.Equal(t, 380.0, gbps)
	assert.Contains(t, why, "instance type ecs.ebmgn9gc.64xlarge, profile ebmgn9gc: ")

	opt.InstanceType = "ecs.g7.large"
	gbps, why = ExpectedWriteGbps(ctx, h, opt)
	assert.Zero(t, gbps, "a type without a profile: no expectation")
	assert.Empty(t, why)

	inst, err := Instance(ctx, h, DefaultOptions())
	if err == nil && inst != nil {
		p, ok, _ := erdma.LookupProfile(inst.Type)
		gbps, _ = ExpectedWriteGbps(ctx, h, DefaultOptions())
		if ok {
			assert.Equal(t, p.WriteGbps, gbps, "the recorded instance's profile")
		}
	}
}

// The profile nccl run judges bus bandwidth by is the recorded instance's
// (gn8is-2x: 25 Gbit/s of RDMA write); an unknown type has none.
func TestInstanceProfileIsTheRecordedInstances(t *testing.T) {
	h, closer, err := erdma.OpenHost(t.Context(), "../testdata/hosts/gn8is-single.tar.gz")
	require.NoError(t, err)
	defer closer.Close()

	p, inst := InstanceProfile(t.Context(), h, DefaultOptions())
	require.NotNil(t, p)
	assert.Equal(t, "ecs.gn8is-2x.8xlarge", inst.Type)
	assert.Equal(t, "recorded", inst.Source)
	assert.Equal(t, "gn8is-2x", p.Family)
	assert.Equal(t, 25.0, p.WriteGbps)

	opt := DefaultOptions()
	opt.InstanceType = "ecs.g7.large"
	p, inst = InstanceProfile(t.Context(), h, opt)
	assert.Nil(t, p, "no profile for a type that is not an eRDMA GPU family")
	assert.Equal(t, "ecs.g7.large", inst.Type)

	opt.InstanceType = "not-a-type"
	p, inst = InstanceProfile(t.Context(), h, opt)
	assert.Nil(t, p)
	assert.Nil(t, inst)
}

// A bw test is judged by the instance's figure only when it covers every
// eRDMA device, each into a peer NIC of its own.
func TestExpectedTestGbpsOnlyForTheWholeInstance(t *testing.T) {
	h, closer, err := erdma.OpenHost(t.Context(), "../testdata/hosts/ebmgn8is-healthy.tar.gz") // erdma_0, erdma_1
	require.NoError(t, err)
	defer closer.Close()
	ctx := t.Context()
	opt := DefaultOptions()
	opt.InstanceType = "ecs.ebmgn9gc.64xlarge" // 380 Gbit/s over 2 ERIs

	gbps, why := ExpectedTestGbps(ctx, h, opt, []string{"erdma_1", "erdma_0", "erdma_0"}, false)
	assert.Equal(t, 380.0, gbps)
	assert.Contains(t, why, "profile ebmgn9gc")

	gbps, why = ExpectedTestGbps(ctx, h, opt, []string{"erdma_0"}, false)
	assert.Zero(t, gbps)
	assert.Equal(t, "the instance type's 380 Gbit/s is for every eRDMA device together (erdma_0, erdma_1); the test has erdma_0", why)

	gbps, why = ExpectedTestGbps(ctx, h, opt, []string{"erdma_0", "erdma_1"}, true)
	assert.Zero(t, gbps)
	assert.Contains(t, why, "every stream here goes into one peer device")

	gbps, why = ExpectedTestGbps(ctx, h, opt, []string{"rxe0"}, false)
	assert.Zero(t, gbps)
	assert.Contains(t, why, "the test has rxe0")

	opt.InstanceType = "ecs.ebmgn8is.32xlarge" // no published figure: nothing to say
	gbps, why = ExpectedTestGbps(ctx, h, opt, []string{"erdma_0"}, false)
	assert.Zero(t, gbps)
	assert.Empty(t, why)

	one, closer1, err := erdma.OpenHost(t.Context(), "../testdata/hosts/gn8is-single.tar.gz") // gn8is-2x, 25 Gbit/s, one ERI
	require.NoError(t, err)
	defer closer1.Close()
	gbps, _ = ExpectedTestGbps(ctx, one, DefaultOptions(), []string{"erdma_0"}, true)
	assert.Equal(t, 25.0, gbps, "one NIC into --server-device: still the whole instance")
}

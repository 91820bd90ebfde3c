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

package doctor

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// InstanceProfile is the profile of the host's instance type, the instance
// Instance decides: nil when the type or its profile is unknown (the
// metadata service is asked only when opt.Metadata is set, under its own
// timeout). It is what `nccl run` and `fleet prove` judge bus bandwidth by
// (nccl.Expectation.Profile) when no figure is given.
func InstanceProfile(ctx context.Context, h erdma.Host, opt Options) (*erdma.Profile, *erdma.Instance) {
	inst, err := Instance(ctx, h, opt)
	if err != nil || inst == nil {
		return nil, nil
	}
	p, ok, err := erdma.LookupProfile(inst.Type)
	if err != nil || !ok {
		return nil, inst
	}
	return p, inst
}

// ExpectedWriteGbps is the aggregate RDMA write bandwidth every eRDMA
// device of the host should reach together: the figure of InstanceProfile,
// and where it comes from. 0 and "" when the instance type, its profile or
// its figure is unknown.
func ExpectedWriteGbps(ctx context.Context, h erdma.Host, opt Options) (gbps float64, why string) {
	p, inst := InstanceProfile(ctx, h, opt)
	if p == nil || p.WriteGbps == 0 {
		return 0, ""
	}
	return p.WriteGbps, fmt.Sprintf("instance type %s, profile %s: %s", inst.Type, p.Family, p.Source)
}

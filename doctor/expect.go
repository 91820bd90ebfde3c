package doctor

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// ExpectedWriteGbps is the aggregate RDMA write bandwidth every eRDMA
// device of the host should reach together: the instance profile's figure
// for the instance Instance decides, and where it comes from. 0 and "" when
// the instance type, its profile or its figure is unknown (the metadata
// service is asked only when opt.Metadata is set, under its own timeout).
func ExpectedWriteGbps(ctx context.Context, h erdma.Host, opt Options) (gbps float64, why string) {
	inst, err := Instance(ctx, h, opt)
	if err != nil || inst == nil {
		return 0, ""
	}
	p, ok, err := erdma.LookupProfile(inst.Type)
	if err != nil || !ok || p.WriteGbps == 0 {
		return 0, ""
	}
	return p.WriteGbps, fmt.Sprintf("instance type %s, profile %s: %s", inst.Type, p.Family, p.Source)
}

package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// ExpectedTestGbps is the total a bandwidth test from devices should reach:
// ExpectedWriteGbps's figure when devices are every eRDMA device of the host
// and each writes into a device of its own on the peer (shared false: no
// --server-device taking every stream). Otherwise gbps is 0 and why says
// why the instance's figure does not apply: it is for the instance's ERIs
// together, not for a part of them or for streams sharing one peer NIC.
// Both are zero when the instance has no figure.
func ExpectedTestGbps(ctx context.Context, h erdma.Host, opt Options, devices []string, shared bool) (gbps float64, why string) {
	gbps, why = ExpectedWriteGbps(ctx, h, opt)
	if gbps == 0 {
		return 0, ""
	}
	devs, _, err := erdma.ReadDevices(ctx, h)
	if err != nil {
		return 0, fmt.Sprintf("the instance type's %.0f Gbit/s not applied: its eRDMA devices could not be listed: %v", gbps, err)
	}
	var all []string
	for _, d := range devs {
		if d.ERDMA {
			all = append(all, d.Name)
		}
	}
	tested := slices.Compact(slices.Sorted(slices.Values(devices)))
	slices.Sort(all)
	switch {
	case !slices.Equal(tested, all):
		return 0, fmt.Sprintf("the instance type's %.0f Gbit/s is for every eRDMA device together (%s); the test has %s",
			gbps, orNone(all), orNone(tested))
	case shared && len(tested) > 1:
		return 0, fmt.Sprintf("the instance type's %.0f Gbit/s is for each NIC writing into a NIC of its own; every stream here goes into one peer device", gbps)
	}
	return gbps, why
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

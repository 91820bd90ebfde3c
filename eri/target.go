package eri

import (
	"context"
	"fmt"

	"github.com/erdmakit/erdmakit/erdma"
)

// ResolveTarget fills the fields t lacks (region, instance id, instance
// type) from the metadata service; set fields win. Off ECS, with fields
// missing, the error wraps ErrNotOnECS.
func ResolveTarget(ctx context.Context, md *erdma.MetadataClient, t Target) (Target, error) {
	if t.Region != "" && t.InstanceID != "" && t.InstanceType != "" {
		return t, nil
	}
	if md == nil {
		md = &erdma.MetadataClient{}
	}
	inst, err := md.Instance(ctx)
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrNotOnECS, err)
	}
	if t.Region == "" {
		t.Region = inst.Region
	}
	if t.InstanceID == "" {
		t.InstanceID = inst.ID
	}
	if t.InstanceType == "" {
		t.InstanceType = inst.Type
	}
	return t, nil
}

// StatusOf is `erdmakit eri status`: the cloud's view of the target matched
// by MAC to the host's inventory (inv may be nil).
func (c *Client) StatusOf(ctx context.Context, t Target, inv *erdma.Inventory) (*Status, error) {
	v, err := c.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	return Match(v, inv), nil
}

// ERIMACs returns the MACs of the ERIs to configure in the OS: the view's
// secondary ERIs when there is a view, else every eRDMA device's netdev in
// the inventory.
func ERIMACs(v *View, inv *erdma.Inventory) []string {
	var out []string
	if v != nil {
		for _, e := range v.ERIs() {
			if !e.IsPrimary() && e.MAC != "" {
				out = append(out, e.MAC)
			}
		}
		return out
	}
	if inv == nil {
		return nil
	}
	macs := map[string]string{}
	for _, n := range inv.Netdevs {
		macs[n.Name] = n.MAC
	}
	for _, d := range inv.Devices {
		if d.ERDMA && macs[d.Netdev] != "" {
			out = append(out, macs[d.Netdev])
		}
	}
	return out
}

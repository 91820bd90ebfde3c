package monitor

import (
	"context"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// HostSampler samples a host's ports and counters through the erdma reader
// (live or recorded), without running any program.
type HostSampler struct {
	Host erdma.Host
	// Devices, when not empty, limits the sample to these device names.
	Devices []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Sample reads the host now.
func (s HostSampler) Sample(ctx context.Context) (*Sample, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	inv, err := erdma.ReadInventory(ctx, s.Host, erdma.InventoryOptions{SkipTools: true})
	if err != nil {
		return nil, err
	}
	if len(s.Devices) > 0 {
		keep := inv.Devices[:0:0]
		for _, d := range inv.Devices {
			for _, want := range s.Devices {
				if d.Name == want {
					keep = append(keep, d)
				}
			}
		}
		inv.Devices = keep
	}
	return SampleFromInventory(inv, now()), nil
}

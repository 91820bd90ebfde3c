package monitor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// HostSampler samples a host's ports and counters through the erdma reader
// (live or recorded), without running any program.
type HostSampler struct {
	Host erdma.Host
	// Devices, when not empty, limits the sample to these device names.
	// Sample does not fail on a name that is absent (a device may go and
	// come back while watched): call CheckDevices before watching.
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

// ErrNoSuchDevice: a device asked for by name is not on the host.
var ErrNoSuchDevice = errors.New("no such RDMA device")

// CheckDevices returns ErrNoSuchDevice naming each of s.Devices the host
// does not have, and the devices it has.
func (s HostSampler) CheckDevices(ctx context.Context) error {
	if len(s.Devices) == 0 {
		return nil
	}
	inv, err := erdma.ReadInventory(ctx, s.Host, erdma.InventoryOptions{SkipTools: true})
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(inv.Devices))
	names := make([]string, 0, len(inv.Devices))
	for _, d := range inv.Devices {
		have[d.Name] = true
		names = append(names, d.Name)
	}
	var missing []string
	for _, want := range s.Devices {
		if !have[want] {
			missing = append(missing, want)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return fmt.Errorf("%w: %s (the host has %s)", ErrNoSuchDevice, strings.Join(missing, ", "), strings.Join(names, ", "))
}

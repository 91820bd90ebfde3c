package monitor

import (
	"context"
	"sort"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
)

// Sample is one reading of every RDMA port on a host.
type Sample struct {
	Time  time.Time    `json:"time"`
	Ports []PortSample `json:"ports"`
}

// PortSample is one port's state and counters at the time of a Sample.
type PortSample struct {
	Device   string            `json:"device"`
	Port     int               `json:"port"`
	ERDMA    bool              `json:"erdma"`
	State    string            `json:"state"`
	Netdev   string            `json:"netdev,omitempty"`
	Counters map[string]uint64 `json:"counters"`
}

// Key identifies a port across samples.
func (p PortSample) Key() PortKey { return PortKey{p.Device, p.Port} }

// PortKey is a device name and port number.
type PortKey struct {
	Device string
	Port   int
}

// Sampler takes samples; tests replace it with recorded sequences.
type Sampler interface {
	Sample(ctx context.Context) (*Sample, error)
}

// SampleFromInventory builds a Sample from an inventory read at time t.
// Only the counters are copied: the inventory keeps its own maps.
func SampleFromInventory(inv *erdma.Inventory, t time.Time) *Sample {
	s := &Sample{Time: t}
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			c := make(map[string]uint64, len(p.Counters))
			for k, v := range p.Counters {
				c[k] = v
			}
			s.Ports = append(s.Ports, PortSample{
				Device: d.Name, Port: p.Number, ERDMA: d.ERDMA, State: p.State,
				Netdev: d.Netdev, Counters: c,
			})
		}
	}
	sort.Slice(s.Ports, func(i, j int) bool {
		a, b := s.Ports[i], s.Ports[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.Port < b.Port
	})
	return s
}

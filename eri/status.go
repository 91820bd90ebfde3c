package eri

import (
	"fmt"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
)

// ENIStatus is one ENI of the view matched by MAC to the OS.
type ENIStatus struct {
	ENI
	Netdev     string   `json:"netdev,omitempty"`      // "" when no local netdev has the MAC
	RDMADevice string   `json:"rdma_device,omitempty"` // the eRDMA device on that netdev
	Up         bool     `json:"up"`
	IPv4       []string `json:"ipv4,omitempty"`
}

// Status is `erdmakit eri status`: the cloud's view matched to the host.
type Status struct {
	View *View       `json:"view"`
	ENIs []ENIStatus `json:"enis"`
	// Unmatched lists local eRDMA devices whose netdev's MAC is no ENI of
	// the instance.
	Unmatched []string `json:"unmatched_rdma_devices,omitempty"`
}

// Match pairs each ENI of v with the inventory's netdev and eRDMA device by
// MAC. inv may be nil (no local view).
func Match(v *View, inv *erdma.Inventory) *Status {
	st := &Status{View: v}
	byMAC := map[string]erdma.Netdev{}
	rdmaBy := map[string]string{} // netdev -> eRDMA device
	if inv != nil {
		for _, n := range inv.Netdevs {
			byMAC[strings.ToLower(n.MAC)] = n
		}
		for _, d := range inv.Devices {
			if d.ERDMA && d.Netdev != "" {
				rdmaBy[d.Netdev] = d.Name
			}
		}
	}
	seen := map[string]bool{}
	for _, e := range v.ENIs {
		s := ENIStatus{ENI: e}
		if n, ok := byMAC[e.MAC]; ok && e.MAC != "" {
			s.Netdev, s.Up, s.IPv4 = n.Name, n.OperState == "up", n.IPv4
			s.RDMADevice = rdmaBy[n.Name]
			seen[n.Name] = true
		}
		st.ENIs = append(st.ENIs, s)
	}
	if inv != nil {
		for _, d := range inv.Devices {
			if d.ERDMA && !seen[d.Netdev] {
				st.Unmatched = append(st.Unmatched, d.Name)
			}
		}
	}
	return st
}

// Warnings are what `eri status` warns about: ERIs sharing a channel (half
// bandwidth each) and ERIs without an eRDMA device in the OS.
func (s *Status) Warnings() []string {
	var out []string
	shared := s.View.SharedChannels()
	for _, k := range keysInt(boolKeys(shared)) {
		out = append(out, fmt.Sprintf("ERIs %s share NetworkCardIndex %d: each gets half the bandwidth; "+
			"stop the instance, detach one and run erdmakit eri attach (it picks a free channel; %s)", strings.Join(shared[k], ", "), k, erdma.ERIDetachNote))
	}
	for _, e := range s.ENIs {
		if e.IsERI() && e.InstanceID == s.View.Target.InstanceID && e.RDMADevice == "" {
			where := "no netdev with its MAC (driver or ENI not configured)"
			if e.Netdev != "" {
				where = "netdev " + e.Netdev + " has no eRDMA device (eRDMA driver missing: env_setup.sh --egs)"
			}
			out = append(out, fmt.Sprintf("ERI %s (%s): %s", e.ID, e.MAC, where))
		}
	}
	return out
}

func boolKeys[V any](m map[int]V) map[int]bool {
	out := map[int]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

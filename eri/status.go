package eri

import (
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
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

	inv *erdma.Inventory
}

// Match pairs each ENI of v with the inventory's netdev and eRDMA device by
// MAC. inv may be nil (no local view).
func Match(v *View, inv *erdma.Inventory) *Status {
	st := &Status{View: v, inv: inv}
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

// Findings are what `eri status` judges, decided by the doctor's own
// checks so that one fact has one severity everywhere: network-card-channel
// (two ERIs on one card fail: half bandwidth each) and, with a local view,
// eri-mode (every ERI has its netdev and eRDMA device).
func (s *Status) Findings() []health.Finding {
	out := []health.Finding{ChannelFinding(s.View)}
	if s.inv != nil {
		out = append(out, ModeFinding(s.View, s.inv))
	}
	return out
}

// Worst is the worst severity of Findings: ok, warn or fail.
func (s *Status) Worst() health.Severity {
	w := health.OK
	for _, f := range s.Findings() {
		w = health.Worst(w, f.Severity)
	}
	return w
}

func boolKeys[V any](m map[int]V) map[int]bool {
	out := map[int]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

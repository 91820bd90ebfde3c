//go:build !linux

package netdev

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"

	"github.com/erdmakit/erdmakit/erdma"
)

// Plan reads the live netdev through netlink, which only Linux has: here it
// answers erdma.ErrNotLinux, so that the packages above (the doctor on a
// recording, eri, setup's plans) still build where a laptop renders results.
func Plan(h *netlink.Handle, c Config) (steps []Step, found []string, err error) {
	return nil, nil, fmt.Errorf("%s: live netdev: %w", c.Name, erdma.ErrNotLinux)
}

// ERIMetric is MinMetric outside Linux: there are no live routes to read.
func ERIMetric(h *netlink.Handle, names []string) int { return MinMetric }

// Gateway is nil outside Linux: there are no live routes to read.
func Gateway(h *netlink.Handle, name string, subnet *net.IPNet) net.IP { return nil }

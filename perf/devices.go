package perf

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
)

// hostAt is the erdma host whose sysfs the engine reads: this host for "/"
// (or ""), a recorded host otherwise.
func hostAt(root string) erdma.Host {
	if root == "" || filepath.Clean(root) == "/" {
		return erdma.LiveHost()
	}
	return erdma.RecordedHost(root)
}

// DefaultDevices names the devices `bw` and `perftest` test when none is
// given: every eRDMA device of root (the doctor's rule: driver "erdma" or PCI
// id 1ded:107f, never the name); when there is none, the only RDMA device if
// there is exactly one (a Soft-RoCE lab). It gives up when ctx ends.
func DefaultDevices(ctx context.Context, root string) ([]string, error) {
	devs, _, err := erdma.ReadDevices(ctx, hostAt(root))
	if err != nil {
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	}
	var all, erdmaDevs []string
	for _, d := range devs {
		all = append(all, d.Name)
		if d.ERDMA {
			erdmaDevs = append(erdmaDevs, d.Name)
		}
	}
	sort.Strings(all)
	sort.Strings(erdmaDevs)
	switch {
	case len(erdmaDevs) > 0:
		return erdmaDevs, nil
	case len(all) == 1:
		return all, nil
	case len(all) == 0:
		return nil, fmt.Errorf("no RDMA devices under %s (is the RDMA driver loaded?)", filepath.Join(root, erdma.ClassInfiniband))
	}
	return nil, fmt.Errorf("no eRDMA device among %s: name the devices to test with -d", strings.Join(all, ", "))
}

package perf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultDevices names the devices `bw` and `perftest` test when none is
// given: every eRDMA device under root's sys/class/infiniband (by driver
// "erdma" or PCI vendor 0x1ded, never by name); when there is none, the only
// RDMA device if there is exactly one (a Soft-RoCE lab).
func DefaultDevices(root string) ([]string, error) {
	dir := filepath.Join(root, "sys/class/infiniband")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no RDMA devices: %s does not exist (is the RDMA driver loaded?)", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	}
	var all, erdma []string
	for _, e := range ents {
		name := e.Name()
		all = append(all, name)
		drv, _ := os.Readlink(filepath.Join(dir, name, "device/driver"))
		vendor, _ := os.ReadFile(filepath.Join(dir, name, "device/vendor"))
		if filepath.Base(drv) == "erdma" || strings.TrimSpace(string(vendor)) == "0x1ded" {
			erdma = append(erdma, name)
		}
	}
	sort.Strings(all)
	sort.Strings(erdma)
	switch {
	case len(erdma) > 0:
		return erdma, nil
	case len(all) == 1:
		return all, nil
	case len(all) == 0:
		return nil, fmt.Errorf("no RDMA devices under %s", dir)
	}
	return nil, fmt.Errorf("no eRDMA device among %s: name the devices to test with -d", strings.Join(all, ", "))
}

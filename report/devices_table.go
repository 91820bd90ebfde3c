package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	texttable "github.com/erdmakit/erdmakit/internal/render/table"
)

// WriteDevicesTable prints a host's inventory the way `erdmakit devices`
// does: one row per RDMA device and port (driver, PCI address, NUMA node,
// transport, port state and link layer, the paired netdev with its IPv4
// addresses and MTU, the recommended GID index, the uverbs node), or what
// to do when there is none; then the kernel modules loaded and absent, the
// memlock limit and the tools found. It has no severity words: Color
// changes nothing.
func WriteDevicesTable(w io.Writer, inv *erdma.Inventory, o TableOptions) error {
	var b strings.Builder
	if err := writeDevices(&b, inv); err != nil {
		return err
	}
	return write(w, &b)
}

func writeDevices(w *strings.Builder, inv *erdma.Inventory) error {
	if len(inv.Devices) == 0 {
		fmt.Fprintf(w, "No RDMA devices in %s (sys/class/infiniband is empty or absent).\n", inv.Root)
		fmt.Fprintln(w, "On an eRDMA GPU instance: attach ERIs (NetworkInterfaceTrafficMode=HighPerformance), install the "+
			"eRDMA driver (env_setup.sh --egs; check with `eadm ver`), then run `erdmakit doctor`.")
	} else {
		netdevs := map[string]erdma.Netdev{}
		for _, n := range inv.Netdevs {
			netdevs[n.Name] = n
		}
		t := texttable.New("DEVICE", "DRIVER", "PCI", "NUMA", "TRANSPORT", "PORT", "STATE", "LINK", "NETDEV", "IPV4", "MTU", "GID", "UVERBS")
		for _, d := range inv.Devices {
			nd := netdevs[d.Netdev]
			ipv4 := strings.Join(nd.IPv4, ",")
			mtu := ""
			if nd.MTU > 0 {
				mtu = strconv.Itoa(nd.MTU)
			}
			netdev := d.Netdev
			if netdev != "" && nd.OperState != "" && nd.OperState != "up" {
				netdev += " (" + nd.OperState + ")"
			}
			uv := d.UVerbs
			if uv != "" && !d.UVerbsPresent {
				uv += " (no /dev node)"
			}
			driver := d.Driver
			if d.ERDMA && driver != "erdma" {
				driver += " (eRDMA by PCI id)"
			}
			numa := strconv.Itoa(d.NUMANode)
			if d.NUMANode < 0 {
				numa = "-"
			}
			ports := d.Ports
			if len(ports) == 0 {
				ports = []erdma.Port{{RecommendedGIDIndex: -1}}
			}
			for _, p := range ports {
				gid := "-"
				if p.RecommendedGIDIndex >= 0 {
					gid = strconv.Itoa(p.RecommendedGIDIndex)
				}
				port := ""
				if p.Number > 0 {
					port = strconv.Itoa(p.Number)
				}
				t.Add(d.Name, driver, d.PCIAddress, numa, string(d.Transport), port, p.State, p.LinkLayer,
					netdev, ipv4, mtu, gid, uv)
			}
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	var loaded, missing []string
	for _, m := range inv.Modules {
		if m.Loaded {
			s := m.Name
			if m.Version != "" {
				s += " " + m.Version
			}
			loaded = append(loaded, s)
		} else {
			missing = append(missing, m.Name)
		}
	}
	fmt.Fprintf(w, "\nmodules loaded: %s\n", joinOrNone(loaded))
	fmt.Fprintf(w, "modules absent: %s\n", joinOrNone(missing))
	if inv.Memlock != nil {
		ml := strconv.FormatUint(inv.Memlock.Soft, 10) + " bytes"
		if inv.Memlock.Unlimited {
			ml = "unlimited"
		}
		fmt.Fprintf(w, "memlock: %s\n", ml)
	}
	var tools []string
	for _, t := range inv.Tools {
		if t.Path == "" {
			tools = append(tools, t.Name+" (not found)")
		} else if t.Version != "" {
			tools = append(tools, t.Name+" "+t.Version)
		} else {
			tools = append(tools, t.Name)
		}
	}
	if len(tools) > 0 {
		fmt.Fprintf(w, "tools: %s\n", strings.Join(tools, ", "))
	}
	return nil
}

// joinOrNone joins s, or says none.
func joinOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

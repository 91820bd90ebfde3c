package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/spf13/cobra"
)

// newDevicesCmd: `erdmakit devices`, ibv_devinfo and `rdma link` in one view.
func newDevicesCmd(g *globals) *cobra.Command {
	var skipTools, skipCounters bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List RDMA devices, ports, GIDs and their netdevs (ibv_devinfo + rdma link in one view)",
		Long: "Reads the host (or --root, a recorded host) and prints one row per RDMA port: driver, PCI address,\n" +
			"NUMA node, transport (roce = eRDMA compat mode, iwarp), port state, link layer, the paired netdev with\n" +
			"its IPv4 and MTU, the recommended GID index (the RoCE v2 ::ffff:<IPv4> entry) and the uverbs device.\n" +
			"--json prints the whole inventory. Exit 0, 1 when some reads failed (listed), 3 when nothing could be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, closer, err := erdma.OpenHost(cmd.Context(), g.root)
			if err != nil {
				return couldNotRun(err)
			}
			defer closer.Close()
			inv, err := erdma.ReadInventory(cmd.Context(), h, erdma.InventoryOptions{SkipTools: skipTools, SkipCounters: skipCounters})
			if err != nil {
				return couldNotRun(err)
			}
			if g.json {
				if err := render.JSON(g.stdout, inv); err != nil {
					return couldNotRun(err)
				}
			} else if err := printDevices(g, inv); err != nil {
				return couldNotRun(err)
			}
			if len(inv.Errors) > 0 {
				for _, e := range inv.Errors {
					fmt.Fprintln(g.stderr, "erdmakit: read error:", e)
				}
				return exitCode(ExitWarn)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&skipTools, "skip-tools", false, "do not look for eadm, ofed_info, ib_write_bw, mpirun, ... on PATH")
	c.Flags().BoolVar(&skipCounters, "skip-counters", false, "do not read hw_counters")
	return c
}

func printDevices(g *globals, inv *erdma.Inventory) error {
	w := g.stdout
	if len(inv.Devices) == 0 {
		fmt.Fprintf(w, "No RDMA devices in %s (sys/class/infiniband is empty or absent).\n", inv.Root)
		fmt.Fprintln(w, "On an eRDMA GPU instance: attach ERIs (NetworkInterfaceTrafficMode=HighPerformance), install the "+
			"eRDMA driver (env_setup.sh --egs; check with `eadm ver`), then run `erdmakit doctor`.")
	} else {
		netdevs := map[string]erdma.Netdev{}
		for _, n := range inv.Netdevs {
			netdevs[n.Name] = n
		}
		t := render.NewTable("DEVICE", "DRIVER", "PCI", "NUMA", "TRANSPORT", "PORT", "STATE", "LINK", "NETDEV", "IPV4", "MTU", "GID", "UVERBS")
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
	fmt.Fprintf(w, "\nmodules loaded: %s\n", orNone(loaded))
	fmt.Fprintf(w, "modules absent: %s\n", orNone(missing))
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

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Package live prints the results of the commands that read a live host or
// the cloud the way erdmakit's CLI does: the GPUs and GPUDirect RDMA (nvml),
// this instance's ERIs (eri status, attach, configure) and counter rates
// (monitor, erdmakit stat). It is package report's sibling, not part of it,
// so that rendering results on a laptop (report) links neither NVML, the
// ECS SDK nor the Prometheus client; like report, the domain packages it
// prints return data only.
package live

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
	"github.com/erdmakit/erdmakit/monitor"
	"github.com/erdmakit/erdmakit/nvml"
	"github.com/erdmakit/erdmakit/report"
)

// WriteGPUsTable prints `erdmakit gpus`: the driver, the GPUs as NVML sees
// them (or why NVML is unavailable), GPUDirect RDMA's readiness with its
// evidence, then the doctor's GPU checks (checks, from doctor.CheckGPUs) as
// report.WriteFindingsTable prints them and their status.
func WriteGPUsTable(w io.Writer, rep *nvml.Report, checks *erdma.Report, o report.TableOptions) error {
	var b strings.Builder
	if rep == nil {
		rep = &nvml.Report{Reason: "no report"}
	}
	if rep.Available && rep.GPUs == nil {
		rep = &nvml.Report{Available: true, GPUs: &nvml.GPUs{}, GDR: rep.GDR}
	}
	if !rep.Available {
		fmt.Fprintf(&b, "NVML unavailable: %s\n  %s\n  fix: %s\n", rep.Reason, rep.Error, rep.Remediation)
	} else {
		fmt.Fprintf(&b, "Driver %s, CUDA %s, %d GPUs\n\n", rep.GPUs.DriverVersion, orDash(rep.GPUs.CUDAVersion), len(rep.GPUs.GPUs))
		t := render.NewTable("GPU", "NAME", "PCI", "NUMA", "MEMORY", "UUID")
		for _, x := range rep.GPUs.GPUs {
			numa := "-"
			if x.NUMANode >= 0 {
				numa = strconv.Itoa(x.NUMANode)
			}
			t.Add(strconv.Itoa(x.Index), x.Name, x.PCIAddress, numa, fmt.Sprintf("%d MiB", x.MemoryTotal>>20), x.UUID)
		}
		_ = t.Write(&b) // a strings.Builder does not fail
		for _, warn := range rep.GPUs.Warnings {
			fmt.Fprintln(&b, "warning:", warn)
		}
	}
	b.WriteByte('\n')
	gdr := rep.GDR
	if gdr.Ready {
		fmt.Fprintf(&b, "GPUDirect RDMA: ready (%s %s)\n", gdr.Path, gdr.Version)
	} else {
		fmt.Fprintf(&b, "GPUDirect RDMA: NOT ready: %s\n", gdr.Missing)
	}
	for _, e := range gdr.Evidence {
		fmt.Fprintln(&b, "  "+e)
	}
	if gdr.Remediation != "" {
		fmt.Fprintln(&b, "  fix: "+gdr.Remediation)
	}
	b.WriteByte('\n')
	if checks == nil {
		checks = &erdma.Report{Status: health.Skip}
	}
	_ = report.WriteFindingsTable(&b, checks.Findings, o)
	why := ""
	if !rep.Available {
		why = " (NVML unavailable: " + rep.Reason + ")"
	}
	fmt.Fprintf(&b, "\nstatus: %s%s\n", checks.Status, why)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteERIStatusTable prints `erdmakit eri status`: the instance and its
// type's ERI facts, one row per ENI matched to its netdev and eRDMA device,
// then the findings (eri.Status.Findings) that are not ok.
func WriteERIStatusTable(w io.Writer, st *eri.Status, findings []health.Finding) error {
	var b strings.Builder
	if st == nil {
		st = &eri.Status{}
	}
	v := st.View
	if v == nil {
		v = &eri.View{}
	}
	ti := v.TypeInfo
	fmt.Fprintf(&b, "instance %s (%s, %s): EriQuantity %d, network cards %v, %d x %s, bandwidth %s, %d QPs per ERI\n\n",
		v.Target.InstanceID, v.Target.InstanceType, v.Target.Region, ti.EriQuantity, ti.NetworkCardIndexes,
		ti.GPUAmount, orDash(ti.GPUSpec), kbps(ti.BandwidthRxKbps), ti.QueuePairNumber)
	t := render.NewTable("ENI", "MAC", "TYPE", "MODE", "CARD", "DEVICE", "IP", "STATUS", "NETDEV", "RDMA")
	for _, e := range st.ENIs {
		t.Add(e.ID, e.MAC, e.Type, e.TrafficMode, optInt(e.NetworkCardIndex), optInt(e.DeviceIndex), orDash(e.IP),
			e.Status, orDash(e.Netdev), orDash(e.RDMADevice))
	}
	_ = t.Write(&b)
	for _, f := range findings {
		if f.Severity != health.Warn && f.Severity != health.Fail {
			continue
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", f.Severity, f.ID, f.Summary)
		if step := f.Step(); step != "" {
			fmt.Fprintf(&b, "  fix: %s\n", step)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteAttachResult prints what `erdmakit eri attach` did: the plan on a
// dry run; otherwise only the calls actually made, what exists now, what
// was left unattached and how to delete it, and the next step only after a
// complete run.
func WriteAttachResult(w io.Writer, res *eri.AttachResult) error {
	var b strings.Builder
	if res != nil {
		writeAttach(&b, res)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeAttach(b *strings.Builder, res *eri.AttachResult) {
	p := res.Plan
	for _, n := range p.Notes {
		fmt.Fprintln(b, "note:", n)
	}
	if res.DryRun {
		if len(p.Steps) == 0 {
			fmt.Fprintf(b, "%d ERI(s) attached on distinct cards, %d wanted: nothing to do\n", p.Have, p.Want)
			return
		}
		fmt.Fprintf(b, "%d ERI(s) attached, %d wanted; calls it would make (dry run: none made):\n", p.Have, p.Want)
		for _, s := range p.Steps {
			for _, call := range s.Calls {
				fmt.Fprintln(b, "  "+call.String())
			}
		}
		return
	}
	switch {
	case len(p.Steps) == 0:
		fmt.Fprintf(b, "%d ERI(s) attached on distinct cards, %d wanted: nothing to do\n", len(res.ERIs), p.Want)
	case len(res.Made) > 0:
		fmt.Fprintln(b, "calls made:")
		for _, m := range res.Made {
			fmt.Fprintf(b, "  %s -> %s\n", m.Call.String(), m.Result)
		}
	default:
		fmt.Fprintln(b, "no call made")
	}
	for _, e := range res.ERIs {
		fmt.Fprintf(b, "ERI %s mac %s NetworkCardIndex %s %s\n", e.ID, e.MAC, optInt(e.NetworkCardIndex), e.Status)
	}
	for _, u := range res.Unattached {
		fmt.Fprintf(b, "not attached: %s (%s): a rerun of erdmakit eri attach attaches it; to delete it instead: %s\n",
			u.ID, u.Status, u.Delete)
	}
	fmt.Fprintln(b, res.Summary())
	if res.Complete && len(p.Steps) > 0 {
		fmt.Fprintln(b, "next: erdmakit eri configure (address the new netdevs), then erdmakit doctor")
	}
}

// WriteConfigureResult prints `erdmakit eri configure`: a line per ERI
// netdev, what was done (or, with dryRun, would be), left alone or failed.
func WriteConfigureResult(w io.Writer, res []eri.LinkResult, dryRun bool) error {
	var b strings.Builder
	for _, r := range res {
		name := orDash(r.Netdev)
		switch {
		case r.Error != "":
			fmt.Fprintf(&b, "%s (%s): error: %s\n", name, r.MAC, r.Error)
		case r.LeftAlone != "":
			fmt.Fprintf(&b, "%s (%s): %s\n", name, r.MAC, r.LeftAlone)
		case len(r.Actions) == 0:
			fmt.Fprintf(&b, "%s (%s): configured already\n", name, r.MAC)
		default:
			verb := "done"
			if dryRun {
				verb = "would do (dry run)"
			}
			fmt.Fprintf(&b, "%s (%s): %s: %s\n", name, r.MAC, verb, strings.Join(r.Actions, "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteStatInterval prints one interval of `erdmakit stat`: a line per
// port (time, port, state, traffic and what moved), then the devices that
// appeared or went.
func WriteStatInterval(w io.Writer, iv monitor.Interval) error {
	var b strings.Builder
	ts := iv.End.Format("15:04:05")
	for _, p := range iv.Ports {
		fmt.Fprintf(&b, "%s  %s/%d  %-6s  tx %s  rx %s  tx %s  rx %s", ts, p.Device, p.Port, p.State,
			gbps(p.TxBytesPerS), gbps(p.RxBytesPerS), mpps(p.TxPacketsPerS), mpps(p.RxPacketsPerS))
		if p.StateBefore != "" {
			fmt.Fprintf(&b, "  state %s -> %s", p.StateBefore, p.State)
		}
		for _, m := range p.Moved {
			fmt.Fprintf(&b, "  %s +%d", m.Name, m.Delta)
		}
		if len(p.Resets) > 0 {
			fmt.Fprintf(&b, "  reset: %s", strings.Join(p.Resets, ","))
		}
		b.WriteByte('\n')
	}
	for _, a := range iv.Appeared {
		fmt.Fprintf(&b, "%s  %s appeared\n", ts, a)
	}
	for _, a := range iv.Gone {
		fmt.Fprintf(&b, "%s  %s gone\n", ts, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func gbps(bps *float64) string {
	if bps == nil {
		return "     n/a Gb/s"
	}
	return fmt.Sprintf("%8.2f Gb/s", monitor.Gbps(bps))
}

func mpps(pps *float64) string {
	if pps == nil {
		return "   n/a Mpps"
	}
	return fmt.Sprintf("%6.3f Mpps", *pps/1e6)
}

func kbps(k int) string {
	if k <= 0 {
		return "unknown"
	}
	return strconv.FormatFloat(float64(k)/1e6, 'f', -1, 64) + " Gbit/s"
}

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

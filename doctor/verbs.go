package doctor

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/hostfs"
	"github.com/erdmakit/erdmakit/nvml"
)

// FindingVerbs is the id of the userspace verbs check: sysfs can look
// healthy while libibverbs or the device's provider is missing, and then
// ibv_devinfo, perftest and NCCL all fail.
const FindingVerbs = "verbs"

// MaxVerbsDevices bounds the devices the verbs check and the DMA-BUF
// probe open: a Verbs implementation opens at most this many per call.
const MaxVerbsDevices = 64

// providerLibDirs are where rdma-core installs its provider plugins.
func providerLibDirs() []string {
	return []string{
		"usr/lib/x86_64-linux-gnu/libibverbs", "usr/lib/aarch64-linux-gnu/libibverbs",
		"usr/lib64/libibverbs", "usr/lib/libibverbs", "usr/local/lib/libibverbs", "usr/local/lib64/libibverbs",
	}
}

// Verbs is what the doctor asks libibverbs on a live host: the verbs check
// (Probe) and NCCL's DMA-BUF question (ProbeDMABUF). Package doctor does not
// drive verbs itself, so that an importer builds it without cgo's verbs
// shim: verbsprobe.Live (package doctor/verbsprobe, through package ibverbs)
// is the real one, which `erdmakit` passes; tests may pass a stand-in. With
// Options.Verbs nil the verbs check says skip and why, and DMA-BUF is
// decided from the RDMA providers alone (nvml.ProviderDMABUF), as where
// libibverbs does not load.
type Verbs interface {
	// Probe loads libibverbs, lists its devices and opens each of names
	// that it lists, querying ports 1..ports[name]. The doctor passes at
	// most 64 names.
	Probe(ctx context.Context, names []string, ports map[string]int) VerbsProbe
	// ProbeDMABUF asks each of names whether its RDMA provider registers
	// dma-bufs, as NCCL does before it uses DMA-BUF, in the form
	// nvml.ReadGDR takes and a recording keeps (nvml.DMABUFProbePath). A
	// library that does not load, or a device that does not open, gives no
	// answer.
	ProbeDMABUF(ctx context.Context, names []string) []nvml.ProbeResult
}

// VerbsProbe is what libibverbs says about the host: whether it loads, the
// devices it lists, and each probed device's ports.
type VerbsProbe struct {
	LoadErr error // libibverbs.so.1 could not be loaded
	ListErr error // ibv_get_device_list failed
	Listed  []string
	Devices []VerbsDevice // the sysfs devices probed, in order
}

// VerbsDevice is one device as libibverbs opened it.
type VerbsDevice struct {
	Name    string
	OpenErr error
	Ports   []VerbsPort
}

// VerbsPort is ibv_query_port's answer for one port.
type VerbsPort struct {
	Number int
	State  string // as libibverbs names it: "PORT_ACTIVE", "PORT_DOWN"
	Err    error
}

// verbsCheck is the built-in userspace verbs check. A recorded host says
// skip: libibverbs can only be asked on the host itself; so does a run
// without a probe (Options.Verbs).
func verbsCheck() Check {
	return Check{ID: FindingVerbs, Step: "guide step 2", Title: "libibverbs loads, lists every RDMA device sysfs has, opens it and queries its ports",
		Run: func(ctx context.Context, in *Input) health.Finding {
			if !in.Host.Live() {
				return health.Finding{Severity: health.Skip, Summary: "recorded host: libibverbs is probed only on the live host"}
			}
			if in.verbs == nil {
				return health.Finding{Severity: health.Skip,
					Summary: "libibverbs was not asked: this run has no verbs probe (doctor.Options.Verbs; verbsprobe.Live is the real one)"}
			}
			devs := verbsTargets(in.Inventory.Devices)
			names := make([]string, len(devs))
			ports := map[string]int{}
			for i, d := range devs {
				names[i] = d.Name
				ports[d.Name] = len(d.Ports)
			}
			return verbsFinding(in.Host.Root(), in.Inventory.Devices, in.verbs.Probe(ctx, names, ports))
		}}
}

// verbsTargets are the devices the check opens: the eRDMA devices, or
// every RDMA device where there is none (a Soft-RoCE lab).
func verbsTargets(devs []erdma.Device) []erdma.Device {
	var out []erdma.Device
	for _, d := range devs {
		if d.ERDMA {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = devs
	}
	if len(out) > MaxVerbsDevices {
		out = out[:MaxVerbsDevices]
	}
	return out
}

// verbsFinding decides the verbs check from sysfs's devices and the probe;
// root is the host root under which the provider files are looked for.
func verbsFinding(root string, devs []erdma.Device, p VerbsProbe) health.Finding {
	if p.LoadErr != nil {
		return health.Finding{Severity: health.Fail,
			Summary:     "libibverbs.so.1 cannot be loaded: ibv_devinfo, perftest and NCCL cannot use RDMA",
			Evidence:    []string{p.LoadErr.Error()},
			Remediation: "install the userspace verbs stack (guide step 2): apt-get install libibverbs1 ibverbs-providers, or yum install libibverbs rdma-core"}
	}
	if p.ListErr != nil {
		return health.Finding{Severity: health.Fail, Summary: "libibverbs cannot list the RDMA devices",
			Evidence: []string{p.ListErr.Error()}, Remediation: "check that ib_uverbs is loaded and /dev/infiniband is readable"}
	}
	targets := verbsTargets(devs)
	if len(targets) == 0 {
		return health.Finding{Severity: health.Skip, Summary: "no RDMA device in sysfs for libibverbs to open",
			Evidence: []string{"libibverbs lists: " + listOrNone(p.Listed)}}
	}
	var missing, evidence, remedies []string
	sev := health.OK
	for _, d := range targets {
		if slices.Contains(p.Listed, d.Name) {
			continue
		}
		missing = append(missing, d.Name)
		prov := providerOf(d)
		ev, rem := providerEvidence(root, prov)
		evidence = append(evidence, fmt.Sprintf("%s (driver %s): in sysfs, not listed by libibverbs", d.Name, orDash(d.Driver)))
		evidence = append(evidence, ev...)
		if !slices.Contains(remedies, rem) {
			remedies = append(remedies, rem)
		}
	}
	if len(missing) > 0 {
		evidence = append(evidence, "libibverbs lists: "+listOrNone(p.Listed))
		return health.Finding{Severity: health.Fail,
			Summary:     fmt.Sprintf("libibverbs does not list %s: no userspace provider claims it", strings.Join(missing, ", ")),
			Evidence:    evidence,
			Remediation: strings.Join(remedies, "; ")}
	}
	var summary []string
	for _, vd := range p.Devices {
		if vd.OpenErr != nil {
			sev = health.Worst(sev, health.Fail)
			evidence = append(evidence, fmt.Sprintf("%s: %v", vd.Name, vd.OpenErr))
			continue
		}
		sysfs := deviceByName(devs, vd.Name)
		for _, pt := range vd.Ports {
			if pt.Err != nil {
				sev = health.Worst(sev, health.Fail)
				evidence = append(evidence, fmt.Sprintf("%s port %d: %v", vd.Name, pt.Number, pt.Err))
				continue
			}
			summary = append(summary, fmt.Sprintf("%s port %d %s", vd.Name, pt.Number, pt.State))
			if want := sysfsState(sysfs, pt.Number); want != "" && "PORT_"+want != pt.State {
				sev = health.Worst(sev, health.Warn)
				evidence = append(evidence, fmt.Sprintf("%s port %d: verbs says %s, sysfs says %s", vd.Name, pt.Number, pt.State, want))
			}
		}
	}
	switch sev {
	case health.Fail:
		return health.Finding{Severity: sev, Summary: "libibverbs lists the devices but cannot open or query them",
			Evidence: evidence, Remediation: "check /dev/infiniband permissions and the memlock limit; reinstall the provider (guide step 2)"}
	case health.Warn:
		return health.Finding{Severity: sev, Summary: "libibverbs and sysfs disagree on port state", Evidence: evidence,
			Remediation: "re-run after the link settles; if it persists, reload the driver"}
	}
	return health.Finding{Severity: health.OK,
		Summary:  fmt.Sprintf("libibverbs opens %d device(s): %s", len(p.Devices), strings.Join(summary, ", ")),
		Evidence: []string{"libibverbs lists: " + listOrNone(p.Listed)}}
}

// providerOf is the rdma-core provider name serving d (the stem of
// /etc/libibverbs.d/<name>.driver and lib<name>-rdmav*.so).
func providerOf(d erdma.Device) string {
	switch {
	case d.ERDMA:
		return "erdma"
	case d.Driver == "":
		// Software devices have no PCI driver; rdma_rxe and siw name theirs.
		for _, p := range []string{"rxe", "siw"} {
			if strings.HasPrefix(d.Name, p) {
				return p
			}
		}
		return ""
	}
	if p, ok := map[string]string{"mlx5_core": "mlx5", "mlx4_core": "mlx4", "bnxt_en": "bnxt_re", "qede": "qedr", "ice": "irdma", "i40e": "irdma"}[d.Driver]; ok {
		return p
	}
	return d.Driver
}

// providerEvidence says which of the provider's files exist under root
// and what installs them.
func providerEvidence(root, prov string) (evidence []string, remedy string) {
	if prov == "" {
		return []string{"provider unknown: see /etc/libibverbs.d/*.driver"}, "install rdma-core's providers: apt-get install ibverbs-providers"
	}
	remedy = "install the " + prov + " userspace provider (guide step 2): apt-get install ibverbs-providers, or yum install rdma-core"
	if prov == "erdma" {
		remedy = "install the eRDMA userspace provider (guide step 2, install OFED and the eRDMA driver): Alibaba Cloud's erdma installer, or apt-get install ibverbs-providers (rdma-core 46+)"
	}
	r, err := hostfs.Open(root)
	if err != nil {
		return []string{err.Error()}, remedy
	}
	defer r.Close()
	drv := path.Join("etc/libibverbs.d", prov+".driver")
	if _, err := r.Stat(drv); err != nil {
		evidence = append(evidence, "/"+drv+": missing")
	} else {
		evidence = append(evidence, "/"+drv+": present")
	}
	var found []string
	for _, dir := range providerLibDirs() {
		m, err := r.Glob(path.Join(dir, "lib"+prov+"-rdmav*.so"))
		if err == nil {
			for _, f := range m {
				found = append(found, "/"+f)
			}
		}
	}
	if len(found) == 0 {
		evidence = append(evidence, fmt.Sprintf("lib%s-rdmav*.so: missing from /%s", prov, strings.Join(providerLibDirs(), ", /")))
	} else {
		evidence = append(evidence, strings.Join(found, ", ")+": present")
	}
	return evidence, remedy
}

func deviceByName(devs []erdma.Device, name string) *erdma.Device {
	for i := range devs {
		if devs[i].Name == name {
			return &devs[i]
		}
	}
	return nil
}

func sysfsState(d *erdma.Device, port int) string {
	if d == nil {
		return ""
	}
	for _, p := range d.Ports {
		if p.Number == port {
			return p.State
		}
	}
	return ""
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

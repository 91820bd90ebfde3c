package nvml

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// maxLibIBVerbs bounds the libibverbs names read (a host has one or two).
const maxLibIBVerbs = 16

// GPUDirect RDMA through DMA-BUF: GPU memory exported as a dma-buf and
// registered with ibv_reg_dmabuf_mr, no peer-memory module. NVIDIA's GPU
// Operator documentation: Linux kernel >= 5.12, the NVIDIA *open* GPU
// kernel module, rdma-core >= 34; NVIDIA recommends it over nvidia_peermem
// where supported, and NCCL prefers it when both work (src/transport/net.cc:
// useDmaBuf = useGdr && dmaBufSupport && NCCL_PTR_DMABUF). And the RDMA
// provider must implement reg_dmabuf_mr: NCCL probes each device
// (ibv_reg_dmabuf_mr with fd -1, src/transport/net_ib/gdr.cc), and eRDMA's
// provider does not (provider.go).

// GDRDMABUF is the GDR path "DMA-BUF" (GDR.Path, erdma.GPUInfo.GDRPath).
const GDRDMABUF = "dmabuf"

// Minimums for DMA-BUF registration.
const (
	DMABUFMinKernelMajor = 5
	DMABUFMinKernelMinor = 12
	DMABUFMinRDMACore    = 34
)

// Support is a three-valued answer: what was read decided it, or not.
type Support string

const (
	SupportYes     Support = "yes"
	SupportNo      Support = "no"
	SupportUnknown Support = "unknown"
)

// Module flavours of the NVIDIA GPU kernel module.
const (
	FlavourOpen        = "open"
	FlavourProprietary = "proprietary"
)

// DMABUF is what decides GPUDirect RDMA through DMA-BUF on a host, each
// fact with where it was read, so that a recording replays it.
type DMABUF struct {
	Supported Support `json:"supported"`
	// Kernel is proc/sys/kernel/osrelease ("6.8.0-45-generic").
	Kernel string `json:"kernel,omitempty"`
	// ModuleFlavour is "open", "proprietary" or "" (not seen), from
	// proc/driver/nvidia/version ("Open Kernel Module") and
	// sys/module/nvidia/taint (the proprietary module taints with P).
	ModuleFlavour string `json:"module_flavour,omitempty"`
	// RDMACore is rdma-core's version from libibverbs' file name
	// (libibverbs.so.1.14.50.0 -> "50"), "" when not found.
	RDMACore string `json:"rdma_core,omitempty"`
	// Providers is each RDMA device's provider and its answer
	// (readProviders): DMA-BUF needs one that registers dma-bufs.
	Providers []RDMAProvider `json:"providers"`
	// Missing names each requirement seen unmet or not decided.
	Missing  []string `json:"missing,omitempty"`
	Evidence []string `json:"evidence"`
}

// libibverbsGlobs are where rdma-core's libibverbs.so.1.A.V.0 lives,
// relative to the host root (RecordFiles records the names it finds).
var libibverbsGlobs = []string{
	"usr/lib/*-linux-gnu/libibverbs.so.1.*", "usr/lib64/libibverbs.so.1.*", "usr/lib/libibverbs.so.1.*",
}

var (
	kernelRelease = regexp.MustCompile(`^(\d+)\.(\d+)`)
	libibverbsVer = regexp.MustCompile(`^libibverbs\.so\.1\.\d+\.(\d+)\.\d+$`)
)

// ReadDMABUF reads what decides DMA-BUF registration under root: the
// kernel, the NVIDIA module's flavour, rdma-core, and each RDMA device's
// provider. probes are a live probe's answers (ibverbs.Context.ProbeDMABUF);
// without them a recorded DMABUFProbePath is read, else the provider table
// (ProviderDMABUF) decides. Every read gives up when ctx ends: the answer
// is then unknown, Missing naming what was being read.
func ReadDMABUF(ctx context.Context, root string, probes ...ProbeResult) DMABUF {
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return DMABUF{Supported: SupportUnknown, Missing: []string{err.Error()}, Evidence: []string{}, Providers: []RDMAProvider{}}
	}
	defer r.Close()
	d, cut := readDMABUF(ctx, r, probes)
	if cut != nil || ctx.Err() != nil {
		// What was not read reads as absent: say why instead.
		if cut == nil {
			cut = fmt.Errorf("%s: %w", root, ctx.Err())
		}
		d.Supported, d.Missing = SupportUnknown, []string{"not decided: " + cut.Error()}
	}
	return d
}

// readDMABUF reads d; the error is the first read ctx's end cut short.
func readDMABUF(ctx context.Context, r *hostfs.Root, probes []ProbeResult) (DMABUF, error) {
	d := DMABUF{Evidence: []string{}, Providers: []RDMAProvider{}}
	var cut error
	read := func(rel string) (string, bool) {
		b, err := r.ReadFile(rel, maxSysfsFile)
		if err != nil {
			if cut == nil {
				cut = cutBy(ctx, err)
			}
			if unreadable(err) {
				d.Evidence = append(d.Evidence, fmt.Sprintf("%s: unreadable: %v", rel, err))
			}
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
	var verdicts []Support
	verdict := func(s Support, missing string) {
		verdicts = append(verdicts, s)
		if s != SupportYes {
			d.Missing = append(d.Missing, missing)
		}
	}

	// The kernel.
	if k, ok := read("proc/sys/kernel/osrelease"); ok && k != "" {
		d.Kernel = k
		m := kernelRelease.FindStringSubmatch(k)
		major, minor := 0, 0
		if m != nil {
			major, _ = strconv.Atoi(m[1])
			minor, _ = strconv.Atoi(m[2])
		}
		switch {
		case m == nil:
			d.Evidence = append(d.Evidence, fmt.Sprintf("proc/sys/kernel/osrelease: %s (not a version)", k))
			verdict(SupportUnknown, fmt.Sprintf("kernel release %q not understood (needs >= %d.%d)", k, DMABUFMinKernelMajor, DMABUFMinKernelMinor))
		case major > DMABUFMinKernelMajor || (major == DMABUFMinKernelMajor && minor >= DMABUFMinKernelMinor):
			d.Evidence = append(d.Evidence, fmt.Sprintf("proc/sys/kernel/osrelease: %s (>= %d.%d)", k, DMABUFMinKernelMajor, DMABUFMinKernelMinor))
			verdict(SupportYes, "")
		default:
			d.Evidence = append(d.Evidence, fmt.Sprintf("proc/sys/kernel/osrelease: %s (< %d.%d)", k, DMABUFMinKernelMajor, DMABUFMinKernelMinor))
			verdict(SupportNo, fmt.Sprintf("kernel %s predates %d.%d (RDMA dma-buf registration)", k, DMABUFMinKernelMajor, DMABUFMinKernelMinor))
		}
	} else {
		d.Evidence = append(d.Evidence, "proc/sys/kernel/osrelease: absent")
		verdict(SupportUnknown, "kernel version not known")
	}

	// The module flavour: what the module says of itself first, its
	// taint second (an inference: the open module's "Dual MIT/GPL"
	// licence does not set the proprietary taint).
	byVersion, byTaint := "", ""
	if v, ok := read("proc/driver/nvidia/version"); ok {
		first, _, _ := strings.Cut(v, "\n")
		switch {
		case strings.Contains(first, "Open Kernel Module"):
			byVersion = FlavourOpen
		case strings.Contains(first, "Kernel Module"):
			byVersion = FlavourProprietary
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("proc/driver/nvidia/version: %q", first))
	} else {
		d.Evidence = append(d.Evidence, "proc/driver/nvidia/version: absent")
	}
	if t, ok := read("sys/module/nvidia/taint"); ok {
		byTaint = FlavourOpen
		if strings.Contains(t, "P") {
			byTaint = FlavourProprietary
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("sys/module/nvidia/taint: %q", t))
	} else {
		d.Evidence = append(d.Evidence, "sys/module/nvidia/taint: absent")
	}
	switch {
	case byVersion != "" && byTaint != "" && byVersion != byTaint:
		d.Evidence = append(d.Evidence, fmt.Sprintf("module flavour: %s by its version string, %s by its taint; the version string decides", byVersion, byTaint))
		d.ModuleFlavour = byVersion
	case byVersion != "":
		d.ModuleFlavour = byVersion
	default:
		d.ModuleFlavour = byTaint
	}
	switch d.ModuleFlavour {
	case FlavourOpen:
		verdict(SupportYes, "")
	case FlavourProprietary:
		verdict(SupportNo, "the NVIDIA kernel module is the proprietary one (DMA-BUF needs the open GPU kernel module)")
	default:
		verdict(SupportUnknown, "the NVIDIA kernel module's flavour (open or proprietary) was not seen")
	}

	// rdma-core, by libibverbs' file name.
	var libs []string
	for _, g := range libibverbsGlobs {
		m, _ := r.Glob(g)
		libs = append(libs, m...)
	}
	sort.Strings(libs)
	if len(libs) > maxLibIBVerbs {
		libs = libs[:maxLibIBVerbs]
	}
	best := 0
	for _, rel := range libs {
		if m := libibverbsVer.FindStringSubmatch(path.Base(rel)); m != nil {
			v, _ := strconv.Atoi(m[1])
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s: rdma-core %d", rel, v))
			best = max(best, v)
		}
	}
	switch {
	case best == 0:
		d.Evidence = append(d.Evidence, "libibverbs.so.1.*.*.0: absent")
		verdict(SupportUnknown, "rdma-core's version not known (no libibverbs.so.1.A.V.0)")
	case best >= DMABUFMinRDMACore:
		d.RDMACore = strconv.Itoa(best)
		verdict(SupportYes, "")
	default:
		d.RDMACore = strconv.Itoa(best)
		verdict(SupportNo, fmt.Sprintf("rdma-core %d predates %d (ibv_reg_dmabuf_mr)", best, DMABUFMinRDMACore))
	}

	// The RDMA provider: does it register dma-bufs at all?
	provs, pev := readProviders(r, probes)
	if provs != nil {
		d.Providers = provs
	}
	d.Evidence = append(d.Evidence, pev...)
	v, why := providersVerdict(provs)
	verdict(v, why)

	d.Supported = SupportYes
	for _, v := range verdicts {
		switch {
		case v == SupportNo:
			d.Supported = SupportNo
		case v == SupportUnknown && d.Supported == SupportYes:
			d.Supported = SupportUnknown
		}
	}
	return d, cut
}

// Summary says in a few words what was found: "kernel 6.8.0, open module,
// rdma-core 50, provider erdma".
func (d DMABUF) Summary() string {
	var parts []string
	if d.Kernel != "" {
		parts = append(parts, "kernel "+d.Kernel)
	}
	if d.ModuleFlavour != "" {
		parts = append(parts, d.ModuleFlavour+" module")
	}
	if d.RDMACore != "" {
		parts = append(parts, "rdma-core "+d.RDMACore)
	}
	seen := map[string]bool{}
	for _, p := range d.Providers {
		if p.Provider != "" && !seen[p.Provider] {
			seen[p.Provider] = true
			parts = append(parts, "provider "+p.Provider)
		}
	}
	return strings.Join(parts, ", ")
}

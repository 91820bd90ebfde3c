package nvml

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// GPUDirect RDMA through DMA-BUF needs the RDMA provider too: the GPU's
// dma-buf is registered with ibv_reg_dmabuf_mr, which rdma-core dispatches
// to the device's provider (libibverbs/verbs.c); a provider without
// reg_dmabuf_mr gets libibverbs/dummy_ops.c's EOPNOTSUPP, and NCCL's probe
// (src/transport/net_ib/gdr.cc, fd -1) then turns DMA-BUF off for that
// device. eRDMA is such a provider today: rdma-core's providers/erdma/erdma.c
// has no reg_dmabuf_mr, the released erdma kernel driver (r0.2.37) only
// reg_user_mr, and Alibaba's erdma-controller loads nvidia_peermem on every
// node. So on eRDMA nvidia_peermem stays required whatever the kernel, the
// NVIDIA module and rdma-core are.

// DMABUFProbePath is where a recording keeps the live DMA-BUF probe
// (ibverbs.Context.ProbeDMABUF, one ProbeResult per device), so --root
// replays what decided it.
const DMABUFProbePath = "erdmakit/dmabuf-probe.json"

// maxProviders bounds the RDMA devices looked at.
const maxProviders = 64

// ProbeResult is one device's answer to NCCL's DMA-BUF probe
// (ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0)), as the doctor records it.
type ProbeResult struct {
	Device string `json:"device"`
	// Supported is NCCL's verdict: any answer but EOPNOTSUPP or
	// EPROTONOSUPPORT (EBADF for the fd -1).
	Supported bool `json:"supported"`
	// Result is the answer: "EOPNOTSUPP", "EBADF", or why there was none.
	Result string `json:"result"`
}

// RDMAProvider is one RDMA device's verbs provider and whether it
// registers dma-bufs.
type RDMAProvider struct {
	Device string `json:"device"` // "erdma_0"
	// Driver is the kernel driver of its PCI function
	// (sys/class/infiniband/<dev>/device/driver): "erdma", "mlx5_core";
	// "" when the device has none (rxe, siw).
	Driver string `json:"driver,omitempty"`
	// Provider is rdma-core's provider for that driver ("erdma", "mlx5"),
	// "" when not known.
	Provider string  `json:"provider,omitempty"`
	DMABUF   Support `json:"dmabuf"`
	// Source is what decided DMABUF: "probe" (NCCL's probe, live or
	// recorded in DMABUFProbePath) or "provider" (rdma-core's provider
	// for the driver; ProviderDMABUF).
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// providerDMABUF is what rdma-core's provider for a kernel driver does with
// ibv_reg_dmabuf_mr (rdma-core master, 2026).
var providerDMABUF = map[string]struct {
	provider string
	yes      bool
	source   string
}{
	"erdma": {"erdma", false, "rdma-core providers/erdma/erdma.c has no reg_dmabuf_mr (ibv_reg_dmabuf_mr: EOPNOTSUPP from libibverbs/dummy_ops.c); " +
		"the erdma kernel driver registers GPU memory through peer memory (nvidia_peermem)"},
	"mlx5_core": {"mlx5", true, "rdma-core providers/mlx5 (verbs.c mlx5_reg_dmabuf_mr)"},
	"efa":       {"efa", true, "rdma-core providers/efa (verbs.c efa_reg_dmabuf_mr)"},
	"bnxt_en":   {"bnxt_re", true, "rdma-core providers/bnxt_re (verbs.c bnxt_re_reg_dmabuf_mr)"},
	"ice":       {"irdma", true, "rdma-core providers/irdma (uverbs.c irdma_ureg_mr_dmabuf)"},
	"i40e":      {"irdma", true, "rdma-core providers/irdma (uverbs.c irdma_ureg_mr_dmabuf)"},
	"mana":      {"mana", true, "rdma-core providers/mana (mana.c mana_reg_dmabuf_mr)"},
}

// ProviderDMABUF says whether rdma-core's provider for the kernel driver
// registers dma-bufs: SupportNo for erdma, SupportYes for mlx5_core, efa,
// bnxt_en (bnxt_re), ice/i40e (irdma) and mana, SupportUnknown otherwise;
// with the provider's name and the source.
func ProviderDMABUF(driver string) (provider string, s Support, source string) {
	p, ok := providerDMABUF[driver]
	if !ok {
		return "", SupportUnknown, ""
	}
	if p.yes {
		return p.provider, SupportYes, p.source
	}
	return p.provider, SupportNo, p.source
}

// readProviders reads each RDMA device's driver under r and decides its
// DMA-BUF answer: the probe's where one is given (live, else recorded in
// DMABUFProbePath), the provider table's otherwise.
func readProviders(r *hostfs.Root, live []ProbeResult) ([]RDMAProvider, []string) {
	var ev []string
	probes := map[string]ProbeResult{}
	src := "live probe"
	if len(live) == 0 {
		if b, err := r.ReadFile(DMABUFProbePath, maxConfigFile); err == nil {
			if err := json.Unmarshal(b, &live); err != nil {
				ev = append(ev, fmt.Sprintf("%s: %v (ignored)", DMABUFProbePath, err))
				live = nil
			}
			src = DMABUFProbePath
		}
	}
	for _, p := range live {
		probes[p.Device] = p
	}
	ents, err := r.ReadDir("sys/class/infiniband")
	if err != nil {
		ev = append(ev, "sys/class/infiniband: absent (no RDMA device)")
		return nil, ev
	}
	var out []RDMAProvider
	for _, e := range ents {
		if len(out) >= maxProviders {
			break
		}
		dev := e.Name()
		p := RDMAProvider{Device: dev}
		rel := path.Join("sys/class/infiniband", dev, "device", "driver")
		if t, err := r.Readlink(rel); err == nil {
			p.Driver = path.Base(t)
		}
		var tableSrc string
		p.Provider, p.DMABUF, tableSrc = ProviderDMABUF(p.Driver)
		if pr, ok := probes[dev]; ok {
			p.Source = "probe"
			p.DMABUF = SupportNo
			if pr.Supported {
				p.DMABUF = SupportYes
			}
			p.Reason = fmt.Sprintf("NCCL's probe ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) -> %s (%s)", pr.Result, src)
		} else {
			p.Source = "provider"
			switch {
			case p.Driver == "":
				p.Reason = "no kernel driver under " + path.Dir(rel) + ": the provider is not known"
			case tableSrc == "":
				p.Reason = fmt.Sprintf("driver %s: whether its rdma-core provider registers dma-bufs is not known", p.Driver)
			default:
				p.Reason = fmt.Sprintf("driver %s: %s", p.Driver, tableSrc)
			}
		}
		ev = append(ev, fmt.Sprintf("%s: DMA-BUF %s (%s)", dev, p.DMABUF, p.Reason))
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out, ev
}

// providersVerdict combines the devices' answers: no if any refuses,
// unknown if any is unknown or there is no device, else yes.
func providersVerdict(ps []RDMAProvider) (Support, string) {
	if len(ps) == 0 {
		return SupportUnknown, "no RDMA device to register dma-bufs with"
	}
	var no, unknown []string
	for _, p := range ps {
		name := p.Device
		if p.Provider != "" {
			name += " (" + p.Provider + ")"
		}
		switch p.DMABUF {
		case SupportNo:
			no = append(no, name)
		case SupportUnknown:
			unknown = append(unknown, name)
		}
	}
	switch {
	case len(no) > 0:
		return SupportNo, "the RDMA provider registers no dma-buf: " + strings.Join(no, ", ") +
			" (GPUDirect RDMA there needs nvidia_peermem)"
	case len(unknown) > 0:
		return SupportUnknown, "whether the RDMA provider registers dma-bufs is not known: " + strings.Join(unknown, ", ")
	}
	return SupportYes, ""
}

// RefusedBy names the RDMA providers that register no dma-buf
// ("erdma"), sorted, none when every provider takes them or is unknown.
func (d DMABUF) RefusedBy() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range d.Providers {
		if p.DMABUF != SupportNo {
			continue
		}
		name := p.Provider
		if name == "" {
			name = p.Device
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// WriteProbes is the recorded form of probes (DMABUFProbePath).
func WriteProbes(probes []ProbeResult) ([]byte, error) {
	if probes == nil {
		probes = []ProbeResult{}
	}
	return json.MarshalIndent(probes, "", "  ")
}

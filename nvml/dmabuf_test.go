//go:build cgo

package nvml

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first line of proc/driver/nvidia/version for each flavour.
const (
	openVersion        = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 20:53:44 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
	proprietaryVersion = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
	libibverbs50       = "usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"
)

// The driver link of an RDMA device whose provider takes dma-bufs (mlx5),
// and of an eRDMA device (whose provider does not).
const (
	mlx5Driver  = "sys/class/infiniband/mlx5_0/device/driver"
	erdmaDriver = "sys/class/infiniband/erdma_0/device/driver"
)

// dmabufHost has every DMA-BUF precondition: kernel 6.8, the open module,
// rdma-core 50 and an mlx5 device (extra adds, "-" removes).
func dmabufHost(extra map[string]string) map[string]string {
	files := map[string]string{
		"proc/sys/kernel/osrelease":  "6.8.0-45-generic\n",
		"proc/driver/nvidia/version": openVersion,
		"sys/module/nvidia/taint":    "O\n",
		"sys/module/nvidia/version":  "570.133.20\n",
		libibverbs50:                 "",
		mlx5Driver:                   "-> ../../../../bus/pci/drivers/mlx5_core",
	}
	for k, v := range extra {
		if v == "-" {
			delete(files, k)
			continue
		}
		files[k] = v
	}
	return files
}

func TestReadDMABUF(t *testing.T) {
	for _, tc := range []struct {
		name     string
		extra    map[string]string
		want     Support
		flavour  string
		rdmaCore string
		missing  string
		evidence string
	}{
		{name: "open module, kernel 6.8, rdma-core 50", want: SupportYes, flavour: FlavourOpen, rdmaCore: "50",
			evidence: libibverbs50 + ": rdma-core 50"},
		{name: "kernel 5.12 exactly", extra: map[string]string{"proc/sys/kernel/osrelease": "5.12.0\n"}, want: SupportYes, flavour: FlavourOpen, rdmaCore: "50"},
		{name: "Alibaba Cloud Linux 3 kernel 5.10", extra: map[string]string{"proc/sys/kernel/osrelease": "5.10.134-16.3.al8.x86_64\n"},
			want: SupportNo, flavour: FlavourOpen, rdmaCore: "50", missing: "kernel 5.10.134-16.3.al8.x86_64 predates 5.12"},
		{name: "proprietary module", extra: map[string]string{"proc/driver/nvidia/version": proprietaryVersion, "sys/module/nvidia/taint": "PO\n"},
			want: SupportNo, flavour: FlavourProprietary, rdmaCore: "50", missing: "proprietary one"},
		{name: "open by taint only", extra: map[string]string{"proc/driver/nvidia/version": "-"}, want: SupportYes, flavour: FlavourOpen, rdmaCore: "50",
			evidence: "proc/driver/nvidia/version: absent"},
		{name: "proprietary by taint only", extra: map[string]string{"proc/driver/nvidia/version": "-", "sys/module/nvidia/taint": "POE\n"},
			want: SupportNo, flavour: FlavourProprietary, rdmaCore: "50"},
		{name: "version and taint disagree: the version decides", extra: map[string]string{"sys/module/nvidia/taint": "PO\n"},
			want: SupportYes, flavour: FlavourOpen, rdmaCore: "50", evidence: "module flavour: open by its version string, proprietary by its taint; the version string decides"},
		{name: "flavour not seen", extra: map[string]string{"proc/driver/nvidia/version": "-", "sys/module/nvidia/taint": "-"},
			want: SupportUnknown, rdmaCore: "50", missing: "flavour (open or proprietary) was not seen"},
		{name: "old rdma-core", extra: map[string]string{libibverbs50: "-", "usr/lib64/libibverbs.so.1.5.28.0": ""},
			want: SupportNo, flavour: FlavourOpen, rdmaCore: "28", missing: "rdma-core 28 predates 34"},
		{name: "no libibverbs", extra: map[string]string{libibverbs50: "-"}, want: SupportUnknown, flavour: FlavourOpen,
			missing: "rdma-core's version not known"},
		{name: "the newest libibverbs counts", extra: map[string]string{"usr/lib/libibverbs.so.1.1.17.0": ""}, want: SupportYes, flavour: FlavourOpen, rdmaCore: "50"},
		{name: "kernel release garbage", extra: map[string]string{"proc/sys/kernel/osrelease": "linux\n"}, want: SupportUnknown, flavour: FlavourOpen, rdmaCore: "50",
			missing: `kernel release "linux" not understood`},
		// The RDMA provider (rdma-core's providers/<name>: reg_dmabuf_mr).
		{name: "erdma: the provider has no reg_dmabuf_mr", extra: map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma"},
			want: SupportNo, flavour: FlavourOpen, rdmaCore: "50", missing: "the RDMA provider registers no dma-buf: erdma_0 (erdma)",
			evidence: "erdma_0: DMA-BUF no (driver erdma: rdma-core providers/erdma/erdma.c has no reg_dmabuf_mr (ibv_reg_dmabuf_mr: EOPNOTSUPP from libibverbs/dummy_ops.c); " +
				"the erdma kernel driver registers GPU memory through peer memory (nvidia_peermem))"},
		{name: "erdma beside mlx5: the refusing provider decides", extra: map[string]string{erdmaDriver: "-> ../../../../bus/pci/drivers/erdma"},
			want: SupportNo, flavour: FlavourOpen, rdmaCore: "50", missing: "erdma_0 (erdma)"},
		{name: "efa", extra: map[string]string{mlx5Driver: "-", "sys/class/infiniband/efa_0/device/driver": "-> ../../../../bus/pci/drivers/efa"},
			want: SupportYes, flavour: FlavourOpen, rdmaCore: "50", evidence: "efa_0: DMA-BUF yes (driver efa: rdma-core providers/efa (verbs.c efa_reg_dmabuf_mr))"},
		{name: "a recorded probe beats the table", extra: map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma",
			DMABUFProbePath: `[{"device": "erdma_0", "supported": true, "result": "EBADF"}]`},
			want: SupportYes, flavour: FlavourOpen, rdmaCore: "50",
			evidence: "erdma_0: DMA-BUF yes (NCCL's probe ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) -> EBADF (erdmakit/dmabuf-probe.json))"},
		{name: "a recorded probe says no", extra: map[string]string{DMABUFProbePath: `[{"device": "mlx5_0", "supported": false, "result": "EOPNOTSUPP"}]`},
			want: SupportNo, flavour: FlavourOpen, rdmaCore: "50", missing: "mlx5_0 (mlx5)"},
		{name: "a broken probe file is ignored", extra: map[string]string{DMABUFProbePath: `{`},
			want: SupportYes, flavour: FlavourOpen, rdmaCore: "50", evidence: "erdmakit/dmabuf-probe.json: unexpected end of JSON input (ignored)"},
		{name: "no RDMA device", extra: map[string]string{mlx5Driver: "-"}, want: SupportUnknown, flavour: FlavourOpen, rdmaCore: "50",
			missing: "no RDMA device to register dma-bufs with"},
		{name: "a device without a driver (rxe)", extra: map[string]string{mlx5Driver: "-", "sys/class/infiniband/rxe0/ports/1/state": "4: ACTIVE\n"},
			want: SupportUnknown, flavour: FlavourOpen, rdmaCore: "50", missing: "not known: rxe0"},
		{name: "no kernel release: unknown, a no elsewhere still wins", extra: map[string]string{"proc/sys/kernel/osrelease": "-", "sys/module/nvidia/taint": "P\n", "proc/driver/nvidia/version": "-"},
			want: SupportNo, flavour: FlavourProprietary, rdmaCore: "50", missing: "kernel version not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ReadDMABUF(t.Context(), tree(t, dmabufHost(tc.extra)))
			assert.Equal(t, tc.want, d.Supported)
			assert.Equal(t, tc.flavour, d.ModuleFlavour)
			assert.Equal(t, tc.rdmaCore, d.RDMACore)
			if tc.want == SupportYes {
				assert.Empty(t, d.Missing)
			}
			if tc.missing != "" {
				assert.Contains(t, joinLines(d.Missing), tc.missing)
			}
			if tc.evidence != "" {
				assert.Contains(t, d.Evidence, tc.evidence)
			}
		})
	}
}

func joinLines(s []string) string {
	out := ""
	for _, x := range s {
		out += x + "\n"
	}
	return out
}

// TestGDRPaths: the readiness facts name the path; what is missing and the
// fix are said only when neither is available. (The gdr-peermem finding is
// erdma's, from these facts through GPUInfo.)
func TestGDRPaths(t *testing.T) {
	peermem := map[string]string{"sys/module/nvidia_peermem/version": "570.133.20\n"}
	for _, tc := range []struct {
		name     string
		extra    map[string]string
		path     string
		peermem  string
		severity health.Severity
		summary  string
		fix      string
	}{
		{name: "DMA-BUF without peermem", path: GDRDMABUF, severity: health.OK,
			summary: "GPUDirect RDMA ready through DMA-BUF (kernel 6.8.0-45-generic, open module, rdma-core 50): nvidia_peermem not needed"},
		{name: "DMA-BUF and peermem", extra: peermem, path: GDRDMABUF, peermem: GDRPeermem, severity: health.OK,
			summary: "nvidia_peermem also loaded, NCCL prefers DMA-BUF"},
		{name: "peermem with the proprietary module", extra: merge(peermem, map[string]string{"proc/driver/nvidia/version": proprietaryVersion}),
			path: GDRPeermem, peermem: GDRPeermem, severity: health.OK, summary: "GPUDirect RDMA ready through nvidia_peermem"},
		{name: "neither", extra: map[string]string{"proc/driver/nvidia/version": proprietaryVersion}, severity: health.Fail,
			summary: "not loaded; DMA-BUF: the NVIDIA kernel module is the proprietary one", fix: "or GPUDirect RDMA through DMA-BUF"},
		// eRDMA: every other DMA-BUF precondition holds, yet its provider
		// registers no dma-buf: nvidia_peermem stays required, and the fix
		// offers no DMA-BUF way out.
		{name: "erdma with DMA-BUF's preconditions: peermem required", extra: map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma"},
			severity: health.Fail, summary: "DMA-BUF: the RDMA provider registers no dma-buf: erdma_0 (erdma)", fix: "modprobe nvidia_peermem"},
		{name: "erdma with peermem", extra: merge(peermem, map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma"}),
			path: GDRPeermem, peermem: GDRPeermem, severity: health.OK},
		{name: "no peermem, DMA-BUF undecided", extra: map[string]string{libibverbs50: "-"}, severity: health.Warn,
			summary: "DMA-BUF: rdma-core's version not known", fix: "modprobe nvidia_peermem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := ReadGDR(t.Context(), tree(t, dmabufHost(tc.extra)), "570.133.20")
			assert.Equal(t, tc.path, g.Path)
			assert.Equal(t, tc.path != "", g.Ready)
			assert.Equal(t, tc.peermem, g.Peermem)
			if tc.path == "" {
				assert.Contains(t, g.Missing, tc.summary)
				assert.Contains(t, g.Remediation, tc.fix)
				if len(g.DMABUF.RefusedBy()) > 0 {
					assert.NotContains(t, g.Remediation, "DMA-BUF", "the provider refuses dma-bufs: no DMA-BUF advice")
				}
				assert.Equal(t, tc.severity == health.Warn, g.DMABUF.Supported == SupportUnknown)
			}
			require.NotEmpty(t, g.Evidence)
			assert.Equal(t, tc.path, g.Path)
		})
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestDMABUFRecordReplay: a recording keeps what decides DMA-BUF (the
// kernel release, the module's version and taint, libibverbs by name), so
// --root replays the same answer.
func TestDMABUFRecordReplay(t *testing.T) {
	src := tree(t, dmabufHost(nil))
	lib, err := ForRoot(t.Context(), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	files, err := RecordFiles(context.Background(), lib, src, "test")
	require.NoError(t, err)
	assert.Equal(t, []byte{}, files[libibverbs50], "libibverbs is kept by name only")
	dst := t.TempDir()
	for rel, b := range files {
		p := filepath.Join(dst, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	want := ReadGDR(t.Context(), src, "570.133.20")
	require.Equal(t, SupportYes, want.DMABUF.Supported)
	// The device's driver link comes from the erdma inventory's recording.
	require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(mlx5Driver)), 0o755))
	require.NoError(t, os.Symlink("../../../../bus/pci/drivers/mlx5_core", filepath.Join(dst, mlx5Driver)))
	got := ReadGDR(t.Context(), dst, "570.133.20")
	assert.Equal(t, want, got)
}

// TestDMABUFLiveProbe: a live probe's answers (ibverbs.Context.ProbeDMABUF,
// given to ReadGDR) decide the provider's part, and their recorded form
// (WriteProbes at DMABUFProbePath) replays the same answer.
func TestDMABUFLiveProbe(t *testing.T) {
	files := dmabufHost(map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma"})
	root := tree(t, files)
	g := ReadGDR(t.Context(), root, "570.133.20")
	assert.Equal(t, SupportNo, g.DMABUF.Supported, "the provider table: erdma refuses")
	assert.Equal(t, []string{"erdma"}, g.DMABUF.RefusedBy())

	eopnotsupp := []ProbeResult{{Device: "erdma_0", Supported: false, Result: "EOPNOTSUPP"}}
	g = ReadGDR(t.Context(), root, "570.133.20", eopnotsupp...)
	assert.Equal(t, SupportNo, g.DMABUF.Supported)
	require.Len(t, g.DMABUF.Providers, 1)
	assert.Equal(t, RDMAProvider{Device: "erdma_0", Driver: "erdma", Provider: "erdma", DMABUF: SupportNo, Source: "probe",
		Reason: "NCCL's probe ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0) -> EOPNOTSUPP (live probe)"}, g.DMABUF.Providers[0])

	// A provider that would take a real dma-buf answers EBADF.
	ebadf := []ProbeResult{{Device: "erdma_0", Supported: true, Result: "EBADF"}}
	live := ReadGDR(t.Context(), root, "570.133.20", ebadf...)
	assert.Equal(t, GDRDMABUF, live.Path)
	b, err := WriteProbes(ebadf)
	require.NoError(t, err)
	files[DMABUFProbePath] = string(b)
	replayed := ReadGDR(t.Context(), tree(t, files), "570.133.20")
	assert.Equal(t, GDRDMABUF, replayed.Path)
	assert.Equal(t, SupportYes, replayed.DMABUF.Providers[0].DMABUF)
	assert.Contains(t, replayed.DMABUF.Providers[0].Reason, "-> EBADF (erdmakit/dmabuf-probe.json)")
}

// TestGPUInfoNVLink: the inventory's summary says whether the GPUs have
// NVLink, for the diagnosis of a capped two-NIC bus bandwidth.
func TestGPUInfoNVLink(t *testing.T) {
	rep, err := Inspect(context.Background(), mockNVML(true), hostRoot(t, "ebmgn8is-healthy"), healthyNICs())
	require.NoError(t, err)
	assert.Equal(t, "no", string(rep.GPUs.NVLink()))
}

func FuzzReadDMABUF(f *testing.F) {
	f.Add("6.8.0-45-generic\n", openVersion, "O\n")
	f.Add("5.10.134-16.3.al8.x86_64\n", proprietaryVersion, "PO\n")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, release, version, taint string) {
		root := t.TempDir()
		for rel, content := range map[string]string{"proc/sys/kernel/osrelease": release,
			"proc/driver/nvidia/version": version, "sys/module/nvidia/taint": taint} {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d := ReadDMABUF(context.Background(), root)
		switch d.Supported {
		case SupportYes:
			t.Fatalf("no libibverbs, yet supported: %+v", d)
		case SupportNo, SupportUnknown:
		default:
			t.Fatalf("supported = %q", d.Supported)
		}
		if len(d.Missing) == 0 {
			t.Fatal("nothing missing without libibverbs")
		}
	})
}

// FuzzDMABUFProbeFile: a recorded probe (erdmakit/dmabuf-probe.json) is
// input from elsewhere; whatever it holds, the answer is one of the three
// and names only devices sysfs has.
func FuzzDMABUFProbeFile(f *testing.F) {
	seed, err := WriteProbes([]ProbeResult{{Device: "erdma_0", Supported: false, Result: "EOPNOTSUPP"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add(`[{"device": "erdma_0", "supported": true, "result": "EBADF"}]`)
	f.Add(`{`)
	f.Add(`[{"device": "../../etc", "supported": true}]`)
	f.Fuzz(func(t *testing.T, probe string) {
		root := t.TempDir()
		files := dmabufHost(map[string]string{mlx5Driver: "-", erdmaDriver: "-> ../../../../bus/pci/drivers/erdma", DMABUFProbePath: probe})
		for rel, content := range files {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if target, ok := strings.CutPrefix(content, "-> "); ok {
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d := ReadDMABUF(context.Background(), root)
		if d.Supported != SupportYes && d.Supported != SupportNo {
			t.Fatalf("supported = %q with erdma_0 known", d.Supported)
		}
		if len(d.Providers) != 1 || d.Providers[0].Device != "erdma_0" {
			t.Fatalf("providers %+v", d.Providers)
		}
	})
}

//go:build cgo

package nvml

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first line of proc/driver/nvidia/version for each flavour.
const (
	openVersion        = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 20:53:44 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
	proprietaryVersion = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
	libibverbs50       = "usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"
)

func dmabufHost(extra map[string]string) map[string]string {
	files := map[string]string{
		"proc/sys/kernel/osrelease":  "6.8.0-45-generic\n",
		"proc/driver/nvidia/version": openVersion,
		"sys/module/nvidia/taint":    "O\n",
		"sys/module/nvidia/version":  "570.133.20\n",
		libibverbs50:                 "",
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
		{name: "no kernel release: unknown, a no elsewhere still wins", extra: map[string]string{"proc/sys/kernel/osrelease": "-", "sys/module/nvidia/taint": "P\n", "proc/driver/nvidia/version": "-"},
			want: SupportNo, flavour: FlavourProprietary, rdmaCore: "50", missing: "kernel version not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ReadDMABUF(tree(t, dmabufHost(tc.extra)))
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
		severity erdma.Severity
		summary  string
		fix      string
	}{
		{name: "DMA-BUF without peermem", path: GDRDMABUF, severity: erdma.SeverityOK,
			summary: "GPUDirect RDMA ready through DMA-BUF (kernel 6.8.0-45-generic, open module, rdma-core 50): nvidia_peermem not needed"},
		{name: "DMA-BUF and peermem", extra: peermem, path: GDRDMABUF, peermem: GDRPeermem, severity: erdma.SeverityOK,
			summary: "nvidia_peermem also loaded, NCCL prefers DMA-BUF"},
		{name: "peermem with the proprietary module", extra: merge(peermem, map[string]string{"proc/driver/nvidia/version": proprietaryVersion}),
			path: GDRPeermem, peermem: GDRPeermem, severity: erdma.SeverityOK, summary: "GPUDirect RDMA ready through nvidia_peermem"},
		{name: "neither", extra: map[string]string{"proc/driver/nvidia/version": proprietaryVersion}, severity: erdma.SeverityFail,
			summary: "not loaded; DMA-BUF: the NVIDIA kernel module is the proprietary one", fix: "or GPUDirect RDMA through DMA-BUF"},
		{name: "no peermem, DMA-BUF undecided", extra: map[string]string{libibverbs50: "-"}, severity: erdma.SeverityWarn,
			summary: "DMA-BUF: rdma-core's version not known", fix: "modprobe nvidia_peermem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := ReadGDR(tree(t, dmabufHost(tc.extra)), "570.133.20")
			assert.Equal(t, tc.path, g.Path)
			assert.Equal(t, tc.path != "", g.Ready)
			assert.Equal(t, tc.peermem, g.Peermem)
			if tc.path == "" {
				assert.Contains(t, g.Missing, tc.summary)
				assert.Contains(t, g.Remediation, tc.fix)
				assert.Equal(t, tc.severity == erdma.SeverityWarn, g.DMABUF.Supported == SupportUnknown)
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
	lib, err := ForRoot(hostRoot(t, "ebmgn8is-healthy"))
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
	want := ReadGDR(src, "570.133.20")
	require.Equal(t, SupportYes, want.DMABUF.Supported)
	got := ReadGDR(dst, "570.133.20")
	assert.Equal(t, want, got)
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
		d := ReadDMABUF(root)
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

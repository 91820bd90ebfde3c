package smitopo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseSample(t *testing.T, name string) *Matrix {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	m, err := Parse(context.Background(), f)
	require.NoError(t, err)
	return m
}

func TestParseE01TabSeparated(t *testing.T) {
	m := parseSample(t, "topo-E01-tab-8gpu-10nic.txt")
	assert.Equal(t, "nvidia-smi", m.Source)
	require.Len(t, m.Endpoints, 18)
	assert.Equal(t, []string{"CPU Affinity", "NUMA Affinity"}, m.AffinityColumns)
	for _, tc := range []struct {
		a, b string
		want Link
	}{
		{"GPU0", "GPU0", LinkSelf}, {"GPU0", "GPU1", "NV12"}, {"GPU0", "NIC0", LinkPXB}, {"GPU0", "NIC2", LinkSYS},
		{"GPU7", "mlx5_7", LinkPXB}, {"NIC8", "NIC9", LinkPIX}, {"NIC9", "NIC9", LinkSelf},
	} {
		got, ok := m.Link(tc.a, tc.b)
		require.True(t, ok, "%s-%s", tc.a, tc.b)
		assert.Equal(t, tc.want, got, "%s-%s", tc.a, tc.b)
	}
	assert.Equal(t, Endpoint{Label: "GPU0", CPUAffinity: "48-63,176-191", NUMAAffinity: "3"}, m.Endpoints[0])
	assert.Equal(t, Endpoint{Label: "NIC9", Name: "mlx5_9"}, m.Endpoints[17], "empty affinity cells stay empty")
	n := m.Nearest()
	require.Len(t, n, 8)
	assert.Equal(t, "mlx5_0", n[0].NIC)
	assert.Equal(t, LinkPXB, n[0].Distance)
	assert.True(t, n[0].GDRByDefault)
	assert.Equal(t, "mlx5_6", n[7].NIC)
}

func TestParseE03SpaceAligned(t *testing.T) {
	m := parseSample(t, "topo-E03-space-8gpu-8nic.txt")
	require.Len(t, m.Endpoints, 16)
	assert.Equal(t, []string{"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"}, m.AffinityColumns)
	assert.Equal(t, Endpoint{Label: "GPU4", CPUAffinity: "48-95,144-191", NUMAAffinity: "1", GPUNUMAID: "N/A"}, m.Endpoints[4])
	assert.Equal(t, "mlx5_3", m.Endpoints[11].Name)
	l, _ := m.Link("GPU1", "NIC1")
	assert.Equal(t, LinkPIX, l)
	l, _ = m.Link("GPU0", "NIC4")
	assert.Equal(t, LinkSYS, l)
	l, _ = m.Link("NIC7", "NIC7")
	assert.Equal(t, LinkSelf, l, "the last row ends in 'X ' with a trailing space")
	l, _ = m.Link("GPU3", "GPU5")
	assert.Equal(t, Link("NV18"), l)
}

func TestParseRoundTrip(t *testing.T) {
	for _, name := range []string{"topo-E01-tab-8gpu-10nic.txt", "topo-E03-space-8gpu-8nic.txt"} {
		t.Run(name, func(t *testing.T) {
			m := parseSample(t, name)
			var buf bytes.Buffer
			require.NoError(t, m.WriteText(&buf))
			again, err := Parse(context.Background(), &buf)
			require.NoError(t, err, buf.String())
			assert.Equal(t, m, again)
		})
	}
}

func TestParseOldFormatNICColumns(t *testing.T) {
	in := "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n" +
		"GPU0\t X \tSYS\tPHB\t0-11\n" +
		"GPU1\tSYS\t X \tSYS\t12-23\n" +
		"mlx5_0\tPHB\tSYS\t X \t\n\nLegend:\n"
	m, err := Parse(context.Background(), strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, "mlx5_0", m.Endpoints[2].Name)
	assert.False(t, m.Endpoints[2].IsGPU())
	l, _ := m.Link("GPU0", "mlx5_0")
	assert.Equal(t, LinkPHB, l)
}

func TestParseErrors(t *testing.T) {
	e01, err := os.ReadFile(filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	require.NoError(t, err)
	lines := strings.Split(string(e01), "\n")
	for _, tc := range []struct {
		name, in string
		is       error
		msg      string
	}{
		{name: "empty", in: "", is: ErrNoMatrix},
		{name: "not topo", in: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", is: ErrNoMatrix},
		{name: "truncated rows", in: strings.Join(lines[:6], "\n"), is: ErrIncompleteMatrix, msg: "GPU4"},
		{name: "short row", in: lines[1] + "\n" + "GPU0\t X \tNV12\n", msg: "row GPU0 has 2 cells"},
		{name: "duplicate row", in: strings.Join([]string{lines[1], lines[2], lines[2]}, "\n"), msg: "second row for GPU0"},
		{name: "too many cells", in: "\tGPU0\tCPU Affinity\nGPU0\t X \t0-3\t1\t2\n", msg: "after the devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(context.Background(), strings.NewReader(tc.in))
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			if tc.msg != "" {
				assert.Contains(t, err.Error(), tc.msg)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"topo-E01-tab-8gpu-10nic.txt", "topo-E03-space-8gpu-8nic.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("\tGPU0\tNIC0\nGPU0\t X \tSYS\nNIC0\tSYS\t X \n\nNIC Legend:\n\n  NIC0: erdma_0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(context.Background(), bytes.NewReader(b))
		if err != nil {
			return
		}
		n := len(m.Endpoints)
		if len(m.Links) != n {
			t.Fatalf("%d endpoints, %d rows", n, len(m.Links))
		}
		for _, row := range m.Links {
			if len(row) != n {
				t.Fatalf("row of %d cells for %d endpoints", len(row), n)
			}
		}
		var buf bytes.Buffer
		if err := m.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		_ = m.Nearest()
	})
}

// TestParseAffinityCellsVary: drivers differ in the empty affinity cells
// they print; extra or missing empty trailing cells are tolerated and the
// values kept, while more values than columns is still refused.
func TestParseAffinityCellsVary(t *testing.T) {
	header := "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
	for _, tc := range []struct {
		name, gpu, nic string
		cpu, numa, id  string
	}{
		{name: "extra empty cells", gpu: "GPU0\t X \tPIX\t0-47\t0\t\tN/A\t\t\n", nic: "NIC0\tPIX\t X \t\t\t\t\n", cpu: "0-47", numa: "0", id: "N/A"},
		{name: "empty cell between values", gpu: "GPU0\t X \tPIX\t0-47\t\t0\tN/A\n", nic: "NIC0\tPIX\t X \n", cpu: "0-47", numa: "0", id: "N/A"},
		{name: "missing cells", gpu: "GPU0\t X \tPIX\t0-47\n", nic: "NIC0\tPIX\t X\n", cpu: "0-47"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(context.Background(), strings.NewReader(header+tc.gpu+tc.nic))
			require.NoError(t, err)
			assert.Equal(t, tc.cpu, m.Endpoints[0].CPUAffinity)
			assert.Equal(t, tc.numa, m.Endpoints[0].NUMAAffinity)
			assert.Equal(t, tc.id, m.Endpoints[0].GPUNUMAID)
			l, _ := m.Link("GPU0", "NIC0")
			assert.Equal(t, LinkPIX, l)
		})
	}
	_, err := Parse(context.Background(), strings.NewReader(header+"GPU0\t X \tPIX\t0-47\t0\tN/A\t7\nNIC0\tPIX\t X \n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "4 non-empty cells after the devices, header has 3 affinity columns")
}

// TestParseSkipsOverlongLines: a line over the bound is noise, not a
// reason to lose the matrix after it.
func TestParseSkipsOverlongLines(t *testing.T) {
	e01, err := os.ReadFile(filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	require.NoError(t, err)
	blob := strings.Repeat("x", maxTopoLine+10) + "\n"
	for _, in := range []string{blob + string(e01), string(e01) + blob, blob + blob + string(e01), strings.TrimSuffix(blob, "\n")} {
		m, err := Parse(context.Background(), strings.NewReader(in))
		if in == strings.TrimSuffix(blob, "\n") {
			assert.ErrorIs(t, err, ErrNoMatrix)
			continue
		}
		require.NoError(t, err)
		assert.Len(t, m.Endpoints, 18)
	}
}

func BenchmarkParse(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "topo-E01-tab-8gpu-10nic.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(context.Background(), bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

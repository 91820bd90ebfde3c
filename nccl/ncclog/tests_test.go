package ncclog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseTestsFile(t testing.TB, name string) *TestResult {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	r, err := ParseTests(context.Background(), f)
	require.NoError(t, err)
	return r
}

func i64(n int64) Count { return KnownCount(n) }

func TestParseTestsSamples(t *testing.T) {
	tests := []struct {
		file        string
		collective  string
		ranks       int
		hosts       int
		rows        int
		format      string
		avgBusBW    float64
		outOfBounds int64
		ok          bool
		failures    []string
		last        *Row
		hasNCCL     bool
	}{
		{file: "B01_nccl_tests_all_reduce_8gpu_old_format_error_col_superbench.txt", ranks: 8, hosts: 1, rows: 34,
			format: "error", avgBusBW: 68.4048, ok: true, hasNCCL: true,
			last: &Row{Size: 8589934592, Count: 2147483648, Type: "float", Redop: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 63896, AlgBWGB: 134.44, BusBWGB: 235.26},
				InPlace:    Measurement{TimeUS: 63959, AlgBWGB: 134.30, BusBWGB: 235.03}}},
		{file: "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt", ranks: 16, hosts: 2, rows: 31,
			format: "root", avgBusBW: 70.742, ok: true,
			last: &Row{Size: 8589934592, Count: 2147483648, Type: "float", Redop: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 47535, AlgBWGB: 180.71, BusBWGB: 338.82, Wrong: i64(0)},
				InPlace:    Measurement{TimeUS: 47743, AlgBWGB: 179.92, BusBWGB: 337.35, Wrong: i64(0)}}},
		{file: "B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt", collective: "all_reduce_perf",
			ranks: 2, hosts: 2, rows: 25, format: "root", avgBusBW: 4.79995, outOfBounds: 4,
			failures: []string{".. gpu-1-1 pid 662195: Test failure common.cu:1189", ".. gpu-1-7 pid 2448661: Test failure common.cu:1189"}},
		{file: "B06_nccl_tests_all_gather_mpirun_2node_gb10_v2.18.3_unalign_xauth_noise.txt", collective: "all_gather_perf",
			ranks: 2, hosts: 2, rows: 3, format: "root", avgBusBW: 21.4033, ok: true,
			last: &Row{Size: 4294967296, Count: 536870912, Type: "float", Redop: "none", Root: -1,
				OutOfPlace: Measurement{TimeUS: 96986.7, AlgBWGB: 44.28, BusBWGB: 22.14, Wrong: i64(0)},
				InPlace:    Measurement{TimeUS: 95610.9, AlgBWGB: 44.92, BusBWGB: 22.46, Wrong: i64(0)}}},
		{file: "B08_nccl_tests_nccl1_old_format_NCCL_failure_unhandled_cuda_error.txt", collective: "all_reduce_perf",
			ranks: 8, hosts: 1, format: "nccl1", failures: []string{"NCCL failure all_reduce.cu:95 'unhandled cuda error'"}},
		{file: "B09_nccl_tests_alltoall_single_gpu_step_bytes_inplace_wrong_NA_avg_busbw_0.txt", collective: "alltoall_perf",
			ranks: 1, hosts: 1, rows: 1, format: "root", ok: true,
			last: &Row{Size: 33554432, Count: 8388608, Type: "float", Redop: "none", Root: -1,
				OutOfPlace: Measurement{TimeUS: 19.56, AlgBWGB: 1715.44, BusBWGB: 0, Wrong: i64(0)},
				InPlace:    Measurement{TimeUS: 0.78, AlgBWGB: 43046.10, BusBWGB: 0, Wrong: Count{}}}},
		{file: "C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt",
			collective: "all_reduce_perf", ranks: 4, hosts: 2, hasNCCL: true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := parseTestsFile(t, tc.file)
			assert.Equal(t, tc.collective, r.Collective)
			assert.Equal(t, tc.ranks, r.Ranks)
			assert.Equal(t, tc.hosts, r.Hosts)
			assert.Len(t, r.Rows, tc.rows)
			assert.Equal(t, tc.format, r.Format)
			assert.InDelta(t, tc.avgBusBW, r.AvgBusBW, 1e-9)
			assert.Equal(t, tc.outOfBounds, r.OutOfBounds)
			assert.Equal(t, tc.ok, r.OK, "reasons: %v", r.Reasons)
			assert.Equal(t, tc.ok, len(r.Reasons) == 0)
			if tc.failures == nil {
				tc.failures = []string{}
			}
			assert.Equal(t, tc.failures, r.Failures)
			if tc.last != nil {
				assert.Equal(t, *tc.last, r.Rows[len(r.Rows)-1])
			}
			assert.Equal(t, tc.hasNCCL, r.NCCL != nil)
		})
	}
}

func TestParseTestsDetails(t *testing.T) {
	t.Run("wrong counts and the FAILED footer", func(t *testing.T) {
		r := parseTestsFile(t, "B04_nccl_tests_all_reduce_2node_wrong_nonzero_out_of_bounds_FAILED_v2.17.8.txt")
		row := r.Rows[17]
		assert.Equal(t, int64(1048576), row.Size)
		assert.Equal(t, i64(96), row.OutOfPlace.Wrong)
		assert.Equal(t, i64(32), row.InPlace.Wrong)
		assert.Equal(t, "2.17.8", r.Version)
		assert.Equal(t, 22902, r.NCCLLibrary)
		assert.Len(t, r.Reasons, 3)
		assert.Contains(t, r.Reasons[2], "#wrong > 0")
	})
	t.Run("rank lines", func(t *testing.T) {
		r := parseTestsFile(t, "B02_nccl_tests_all_reduce_mpirun_2node_16rank_h100_new_format.txt")
		require.Len(t, r.Devices, 16)
		assert.Equal(t, TestRank{Rank: 15, Pid: 6740, Host: "ztan-mig-gq73", Device: 7, BusID: "0000:8c:00",
			GPU: "NVIDIA H100 80GB HBM3"}, r.Devices[15])
		assert.Equal(t, TestParams{Threads: 1, GPUs: 1, MinBytes: 8, MaxBytes: 8589934592, Step: "2(factor)",
			WarmupIters: 5, Iters: 20, Validation: r.Params.Validation}, r.Params)
		assert.Equal(t, KnownCount(1), r.Params.Validation)
	})
	t.Run("NCCL 1.x rank lines without pid", func(t *testing.T) {
		r := parseTestsFile(t, "B08_nccl_tests_nccl1_old_format_NCCL_failure_unhandled_cuda_error.txt")
		assert.Equal(t, TestRank{Rank: 7, Host: "node03", Device: 7, BusID: "0x00", GPU: "Tesla P100-PCIE-16GB"}, r.Devices[7])
	})
	t.Run("NCCL lines among the rows", func(t *testing.T) {
		r := parseTestsFile(t, "C01_nccl_info_mpirun_2node_NET_IB_no_device_found_socket_plugin_load_17_v2.10.3_excerpt.txt")
		require.NotNil(t, r.NCCL)
		assert.Equal(t, "Socket", r.NCCL.Network)
		assert.True(t, r.NCCL.IBNoDevice)
		assert.Contains(t, r.Reasons, "no result rows")
	})
	t.Run("Open MPI tagged output", func(t *testing.T) {
		in := "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on h1 device  0 [0x01] GPU\n" +
			"[1,0]<stdout>:     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0    79.90   52.49   98.43      0\n" +
			"[1,0]<stdout>:# Out of bounds values : 0 OK\n[1,0]<stdout>:# Avg bus bandwidth    : 98.3 \n"
		r, err := ParseTests(context.Background(), strings.NewReader(in))
		require.NoError(t, err)
		assert.True(t, r.OK, r.Reasons)
		assert.Equal(t, 1, r.Ranks)
		require.Len(t, r.Rows, 1)
		assert.InDelta(t, 98.18, r.Rows[0].OutOfPlace.BusBWGB, 1e-9)
		assert.InDelta(t, 98.3, r.AvgBusBW, 1e-9)
	})
	t.Run("numeric error column of the old format", func(t *testing.T) {
		in := "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n" +
			"     1048576        262144   float     sum    74.78   14.02   24.54  5e-07    76.17   13.77   24.09  0e+00\n"
		r, err := ParseTests(context.Background(), strings.NewReader(in))
		require.NoError(t, err)
		require.Len(t, r.Rows, 1)
		require.True(t, r.Rows[0].OutOfPlace.Error.Known)
		assert.InDelta(t, 5e-7, r.Rows[0].OutOfPlace.Error.V, 1e-15)
		assert.False(t, r.Rows[0].OutOfPlace.Wrong.Known)
		assert.Equal(t, "error", r.Format)
	})
}

func TestTestParserStreams(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "B06_nccl_tests_all_gather_mpirun_2node_gb10_v2.18.3_unalign_xauth_noise.txt"))
	require.NoError(t, err)
	p := NewTestParser()
	var sizes []int64
	p.OnRow = func(r Row) { sizes = append(sizes, r.Size) }
	var failures []string
	p.OnFailure = func(s string) { failures = append(failures, s) }
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		p.Feed(l + "\n")
		if strings.Contains(l, "2147483648     268435456") {
			assert.Equal(t, []int64{1073741824, 2147483648}, sizes, "rows arrive as their lines do")
			mid := p.Result()
			assert.False(t, mid.OK, "no footer yet")
			assert.Len(t, mid.Rows, 2)
			_ = i
		}
	}
	assert.Len(t, sizes, 3)
	assert.Empty(t, failures)
	assert.True(t, p.Result().OK)
	p.Feed(" .. spark-fb97 pid 548419: Test failure common.cu:1189")
	assert.Len(t, failures, 1)
	assert.False(t, p.Result().OK)
}

func TestParseTestsBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"empty":    "",
		"prose":    "hello\nworld\n",
		"binary":   "\x00\xff\x10\n\x01",
		"perftest": " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536 5000 1.0 1.0 0.1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTests(context.Background(), strings.NewReader(in))
			require.ErrorIs(t, err, ErrNoTestOutput)
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := ParseTests(context.Background(), iotest.ErrReader(boom))
		require.ErrorIs(t, err, boom)
	})
	t.Run("truncated row", func(t *testing.T) {
		in := "#  Rank  0 Group  0 Pid 1 on h1 device  0 [0x01] GPU\n     4194304       1048576     float     sum      -1    80.10   52.3"
		r, err := ParseTests(context.Background(), strings.NewReader(in))
		require.NoError(t, err)
		assert.Empty(t, r.Rows)
		assert.False(t, r.OK)
	})
	t.Run("garbage numbers", func(t *testing.T) {
		in := "#  Rank  0 on h1 device 0\n     4194304       1048576     float     sum      -1    NaN   52.3 98.1 0 1 2 3 4\n" +
			"     -5       1048576     float     sum      -1    1   52.3 98.1 0 1 2 3 4\n"
		r, err := ParseTests(context.Background(), strings.NewReader(in))
		require.NoError(t, err)
		assert.Empty(t, r.Rows)
	})
}

func FuzzParseTests(f *testing.F) {
	addSamples(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseTests(context.Background(), strings.NewReader(string(in)))
		if err != nil {
			require.ErrorIs(t, err, ErrNoTestOutput)
			return
		}
		require.NotNil(t, r.Rows)
		require.NotNil(t, r.Failures)
		require.Equal(t, r.OK, len(r.Reasons) == 0)
	})
}

func addSamples(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(b)
	}
}

func TestParseTestsBoundsRows(t *testing.T) {
	p := NewTestParser()
	row := []byte("     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0    79.90   52.49   98.43      0")
	for range maxRows + 10 {
		p.FeedBytes(row)
	}
	r := p.Result()
	assert.Len(t, r.Rows, maxRows)
	assert.Equal(t, 10, r.RowsDropped)
}

// #wrong prints as a number or N/A with %v (it printed an address as a
// *int64) and stays a number or null in JSON.
func TestCountPrintsAndEncodesAsANumberOrUnknown(t *testing.T) {
	m := Measurement{Wrong: KnownCount(96)}
	assert.Equal(t, "96 N/A", fmt.Sprintf("%v %v", m.Wrong, Count{}))
	assert.Contains(t, fmt.Sprintf("%+v", m), "Wrong:96")
	for _, c := range []struct {
		in   Count
		json string
	}{{KnownCount(0), "0"}, {KnownCount(32), "32"}, {Count{}, "null"}} {
		b, err := json.Marshal(Measurement{Wrong: c.in})
		require.NoError(t, err)
		assert.Contains(t, string(b), `"wrong":`+c.json)
		var back Measurement
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c.in, back.Wrong)
	}
	var bad Measurement
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"wrong":"x"}`), &bad), "want an integer or null")
}

// TestOptionalNumbersPrintAndMarshal: issue 26 item 5. #wrong, the old
// max-error column and "validation" may be missing from a log: %v prints
// each as the number or N/A (a pointer printed an address), and the JSON
// is what it was with pointers: the number, or (error, validation) no key.
func TestOptionalNumbersPrintAndMarshal(t *testing.T) {
	in := "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n" +
		"#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n" +
		"     1048576        262144   float     sum    74.78   14.02   24.54  5e-07    76.17   13.77   24.09  0e+00\n"
	r, err := ParseTests(context.Background(), strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, r.Rows, 1)
	m := r.Rows[0].OutOfPlace
	s := fmt.Sprintf("%v %v %v", m, r.Rows[0].InPlace, r.Params)
	assert.NotContains(t, s, "0xc", "no pointer printed")
	assert.Contains(t, s, "5e-07")
	assert.Contains(t, s, "N/A", "the #wrong the format does not have")
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"time_us":74.78,"algbw_gbs":14.02,"busbw_gbs":24.54,"wrong":null,"error":5e-7}`, string(b))
	assert.Contains(t, string(b), `"error":5e-7`, "written as encoding/json writes a float64")
	b, err = json.Marshal(r.Rows[0].InPlace)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"error":0`, "a known zero is kept")
	b, err = json.Marshal(r.Params)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"validation":1`)

	var back Row
	b, err = json.Marshal(r.Rows[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r.Rows[0], back, "the JSON reads back")

	b, err = json.Marshal(Measurement{Wrong: KnownCount(0)})
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"error"`, "an unknown error column has no key")
	b, err = json.Marshal(TestParams{})
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"validation"`, "no validation printed: no key")
}

package perftest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

func fakeOptions(t *testing.T, mode string) Options {
	t.Helper()
	bin := fixture.Script(t, "testdata/fake_ib_write_bw") // runs without the exec bit a module zip drops
	t.Setenv("FAKE_PERFTEST_MODE", mode)
	t.Setenv("FAKE_PERFTEST_STATE", filepath.Join(t.TempDir(), "state"))
	return Options{Binary: bin, Devices: []string{"rxe0"}, RetryDelay: 50 * time.Millisecond, GIDIndex: -1}
}

func TestArgsFollowTheGuide(t *testing.T) {
	o := Options{QPs: 16, GIDIndex: -1}.withDefaults()
	assert.Equal(t, []string{"-d", "erdma_0", "-F", "--report_gbits", "-p", "18515", "-q", "16"}, o.Args("erdma_0", 18515, ""))
	mb := o
	mb.MBPerSec = true
	assert.Equal(t, []string{"-d", "erdma_0", "-F", "-p", "18515", "-q", "16"}, mb.Args("erdma_0", 18515, ""), "MB/sec: no --report_gbits")
	o = Options{QPs: 4, Size: 4096, Duration: 5 * time.Second, GIDIndex: 1, Method: connect.RDMACM}.withDefaults()
	assert.Equal(t, []string{"-d", "rxe0", "-F", "--report_gbits", "-p", "18516", "-q", "4", "-s", "4096", "-D", "5", "-x", "1", "-R", "10.0.9.1"},
		o.Args("rxe0", 18516, "10.0.9.1"))
	assert.Contains(t, Options{All: true, Iterations: 100}.Args("d", 1, ""), "-a")
}

func TestLatArgs(t *testing.T) {
	o := Options{GIDIndex: -1, latency: true}.withDefaults()
	assert.Equal(t, "ib_write_lat", o.Binary)
	assert.Equal(t, []string{"-d", "erdma_0", "-F", "-p", "18515"}, o.Args("erdma_0", 18515, ""))
	o = Options{QPs: 4, Size: 4096, Iterations: 5000, GIDIndex: 1, Method: connect.RDMACM, latency: true}.withDefaults()
	assert.Equal(t, []string{"-d", "rxe0", "-F", "-p", "18516", "-s", "4096", "-n", "5000", "-x", "1", "-R", "10.0.9.1"},
		o.Args("rxe0", 18516, "10.0.9.1"), "no -q: ib_write_lat runs one QP")
}

func TestRunWriteLatLoopback(t *testing.T) {
	o := fakeOptions(t, "lat")
	o.Devices = []string{"rxe0", "rxe1"}
	runs := RunWriteLat(context.Background(), o)
	require.Len(t, runs, 2)
	for i, r := range runs {
		assert.Empty(t, r.Error)
		assert.Equal(t, DefaultPort+i, r.Port)
		require.NotNil(t, r.Client)
		require.Len(t, r.Client.Latency, 1)
		assert.InDelta(t, 1.47, r.Client.Latency[0].TypicalUS, 1e-9)
		require.NotNil(t, r.Server)
	}
	args, err := os.ReadFile(os.Getenv("FAKE_PERFTEST_STATE") + ".args")
	require.NoError(t, err)
	assert.Contains(t, string(args), "server -d rxe1 -F -p 18516\n")
	assert.Equal(t, health.OK, JudgeLatency(runs, 2, false).Status)
	assert.Equal(t, health.Warn, JudgeLatency(runs, 1.4, false).Status)
}

func TestRunWriteBWLoopback(t *testing.T) {
	o := fakeOptions(t, "ok")
	o.Devices = []string{"rxe0", "rxe1"}
	runs := RunWriteBW(context.Background(), o)
	require.Len(t, runs, 2)
	for i, r := range runs {
		assert.Empty(t, r.Error)
		assert.Equal(t, DefaultPort+i, r.Port, "distinct ports per device")
		require.NotNil(t, r.Client)
		require.NotNil(t, r.Server)
		require.Len(t, r.Client.Results, 1)
		assert.InDelta(t, 0.58, r.Client.Results[0].BWAvgGbps, 1e-9)
		assert.Equal(t, 1, r.Attempts)
		assert.Equal(t, "127.0.0.1", r.Args[len(r.Args)-1])
	}
	args, err := os.ReadFile(os.Getenv("FAKE_PERFTEST_STATE") + ".args")
	require.NoError(t, err)
	assert.Contains(t, string(args), "server -d rxe1 -F --report_gbits -p 18516 -q 16\n")
}

func TestRunWriteBWRetriesWhileTheServerIsNotListening(t *testing.T) {
	o := fakeOptions(t, "refuse-once")
	runs := RunWriteBW(context.Background(), o)
	require.Len(t, runs, 1)
	assert.Empty(t, runs[0].Error)
	assert.Equal(t, 2, runs[0].Attempts)
	require.NotNil(t, runs[0].Client)
	assert.True(t, runs[0].Client.OK())
}

func TestRunWriteBWReportsClientErrors(t *testing.T) {
	o := fakeOptions(t, "fail")
	runs := RunWriteBW(context.Background(), o)
	require.Len(t, runs, 1)
	require.NotNil(t, runs[0].Client)
	assert.False(t, runs[0].Client.OK())
	assert.Contains(t, strings.Join(runs[0].Client.Errors, "\n"), "Couldn't create IB resources")
}

func TestRunWriteBWEndsAHungServer(t *testing.T) {
	o := fakeOptions(t, "hang")
	o.Timeout = 3 * time.Second
	start := time.Now()
	runs := RunWriteBW(context.Background(), o)
	require.Len(t, runs, 1)
	assert.Contains(t, runs[0].Error, "deadline exceeded")
	assert.Contains(t, runs[0].Error, "server:")
	assert.Less(t, time.Since(start), 12*time.Second)
}

func TestRunWriteBWMissingBinary(t *testing.T) {
	runs := RunWriteBW(context.Background(), Options{Binary: "/nonexistent/ib_write_bw", Devices: []string{"rxe0"}, Server: "10.0.0.1", GIDIndex: -1})
	require.Len(t, runs, 1)
	assert.Contains(t, runs[0].Error, "no such file or directory")
}

func TestMappedIPv4(t *testing.T) {
	ip, ok := mappedIPv4("0000:0000:0000:0000:0000:ffff:0a00:0901")
	assert.True(t, ok)
	assert.Equal(t, "10.0.9.1", ip)
	_, ok = mappedIPv4("fe80:0000:0000:0000:5054:00ff:fe00:0901")
	assert.False(t, ok)
}

func TestAutoMethodAddsRForIWARPDevicesOnly(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write("sys/class/infiniband/iwp0/node_type", "4: RNIC\n")
	write("sys/class/infiniband/roce0/node_type", "1: CA\n")
	write("sys/class/infiniband/roce0/ports/1/link_layer", "Ethernet\n")
	o := Options{Root: root, GIDIndex: -1}.withDefaults()
	assert.Contains(t, o.forDevice(t.Context(), "iwp0").Args("iwp0", 1, ""), "-R", "iWARP connects only through rdma_cm")
	assert.NotContains(t, o.forDevice(t.Context(), "roce0").Args("roce0", 1, ""), "-R")
	assert.NotContains(t, o.forDevice(t.Context(), "absent0").Args("absent0", 1, ""), "-R", "unreadable transport: perftest's default")
	o.Method = connect.OOB
	assert.NotContains(t, o.forDevice(t.Context(), "iwp0").Args("iwp0", 1, ""), "-R", "an explicit method wins")
}

package nccl

import (
	"testing"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func wrongN(v int64) Count { return ncclog.KnownCount(v) }

func row(size int64, busbw float64, wrong int64) Row {
	return Row{Size: size, Count: size / 4, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: Measurement{TimeUS: 100, AlgBWGB: busbw / 2, BusBWGB: busbw, Wrong: wrongN(wrong)},
		InPlace:    Measurement{TimeUS: 100, AlgBWGB: busbw / 2, BusBWGB: busbw - 0.5, Wrong: wrongN(0)}}
}

func ibLog() *LogSummary {
	return &LogSummary{NCCLVersion: "2.21.5", Network: "IB",
		IBDevices: []ncclog.IBDevice{{Name: "erdma_0", Port: 1, Link: "RoCE"}},
		GDR:       ncclog.GDR{Enabled: []string{"erdma_0"}},
		Channels:  map[string]int{"NET/IB": 16, "NET/Socket": 0, "P2P": 40, "SHM": 0}, GDRDMAChannels: 16}
}

func good() *TestResult {
	return &TestResult{Collective: "all_reduce_perf", Ranks: 16, Hosts: 2, OK: true, FooterSeen: true,
		Rows: []Row{row(4<<20, 10, 0), row(1<<30, 26.6, 0)}, NCCL: ibLog()}
}

func ids(fs []health.Finding) map[string]health.Finding {
	m := map[string]health.Finding{}
	for _, f := range fs {
		m[f.ID] = f
	}
	return m
}

func TestDiagnose(t *testing.T) {
	profile := &erdma.Profile{Family: "ebmgn8is", ERIs: 2, WriteGbps: 240, Source: "test"}
	tests := []struct {
		name   string
		edit   func(*TestResult)
		exp    Expectation
		want   map[string]health.Severity
		absent []string
		worst  health.Severity
		words  map[string]string // id -> word in summary+remediation+evidence
	}{
		{"healthy run over eRDMA with ncclog.GDR", nil, Expectation{BusBWGBs: 20},
			map[string]health.Severity{"nccl-network": health.OK, "nccl-gdr": health.OK, "nccl-busbw": health.OK},
			[]string{"nccl-wrong", "nccl-socket-fallback"}, health.OK, map[string]string{"nccl-network": "erdma_0:1/RoCE"}},
		{"below the flag's expectation", nil, Expectation{BusBWGBs: 40},
			map[string]health.Severity{"nccl-busbw": health.Warn}, nil, health.Warn, map[string]string{"nccl-busbw": "66%"}},
		{"profile rule: 26.6 >= 240/8/2", nil, Expectation{Profile: profile},
			map[string]health.Severity{"nccl-busbw": health.OK}, nil, health.OK, map[string]string{"nccl-busbw": "15.00"}},
		{"profile rule skips small sizes", func(r *TestResult) { r.Rows = r.Rows[:1] }, Expectation{Profile: profile},
			nil, []string{"nccl-busbw"}, health.OK, nil},
		{"profile rule skips one host", func(r *TestResult) { r.Hosts = 1 }, Expectation{Profile: profile},
			nil, []string{"nccl-busbw"}, health.OK, nil},
		{"socket fallback, HCA matches nothing", func(r *TestResult) {
			r.NCCL = &LogSummary{Network: "Socket", IBNoDevice: true, SocketInterfaces: []string{"eth0"},
				Env:          map[string]string{"NCCL_IB_HCA": "mlx5"},
				PluginErrors: []string{"NET/Plugin : Plugin load returned 17 : libnccl-net.so: cannot open shared object file"},
				Channels:     map[string]int{"NET/IB": 0, "NET/Socket": 8}}
		}, Expectation{},
			map[string]health.Severity{"nccl-socket-fallback": health.Fail}, []string{"nccl-network", "nccl-gdr"}, health.Fail,
			map[string]string{"nccl-socket-fallback": "NCCL_IB_HCA=mlx5 matches no usable device"}},
		{"socket fallback inferred from channels", func(r *TestResult) {
			r.NCCL = &LogSummary{Channels: map[string]int{"NET/IB": 0, "NET/Socket": 8}}
		}, Expectation{}, map[string]health.Severity{"nccl-socket-fallback": health.Fail}, nil, health.Fail,
			map[string]string{"nccl-socket-fallback": "8 channel connections via NET/Socket"}},
		{"ncclog.GDR disabled for the HCA", func(r *TestResult) {
			r.NCCL.GDR = ncclog.GDR{Disabled: []string{"erdma_0"}}
			r.NCCL.GDRDMAChannels = 0
		}, Expectation{}, map[string]health.Severity{"nccl-gdr": health.Warn}, nil, health.Warn,
			map[string]string{"nccl-gdr": "modprobe nvidia_peermem"}},
		{"ncclog.GDR possible but distance", func(r *TestResult) { r.NCCL.GDRDMAChannels = 0 }, Expectation{},
			map[string]health.Severity{"nccl-gdr": health.Warn}, nil, health.Warn,
			map[string]string{"nccl-gdr": "NCCL_NET_GDR_LEVEL=SYS"}},
		{"some ranks on sockets", func(r *TestResult) { r.NCCL.Networks = []string{"IB", "Socket"} }, Expectation{},
			map[string]health.Severity{"nccl-socket-fallback": health.Fail}, nil, health.Fail,
			map[string]string{"nccl-socket-fallback": "some ranks fell back"}},
		{"IB channels without GDRDMA and no ncclog.GDR lines", func(r *TestResult) { r.NCCL.GDR = ncclog.GDR{}; r.NCCL.GDRDMAChannels = 0 }, Expectation{},
			map[string]health.Severity{"nccl-gdr": health.Warn}, nil, health.Warn,
			map[string]string{"nccl-gdr": "16 channel connections via NET/IB"}},
		{"wrong values", func(r *TestResult) { r.Rows[1].OutOfPlace.Wrong = wrongN(96); r.OutOfBounds = 4; r.OK = false }, Expectation{},
			map[string]health.Severity{"nccl-wrong": health.Fail}, nil, health.Fail, map[string]string{"nccl-wrong": "8500"}},
		{"N/A wrong is not corruption", func(r *TestResult) { r.Rows[1].InPlace.Wrong = Count{} }, Expectation{},
			nil, []string{"nccl-wrong"}, health.OK, nil},
		{"memlock", func(r *TestResult) {
			r.NCCL.MemlockSuspect = true
			r.NCCL.QPCreateFailures = 2
			r.NCCL.Warnings = []string{"Call to ibv_create_qp failed with error Unknown error -12"}
		}, Expectation{}, map[string]health.Severity{"nccl-memlock": health.Fail}, []string{"nccl-warnings"}, health.Fail,
			map[string]string{"nccl-memlock": "ulimit -l unlimited"}},
		{"crashing version", func(r *TestResult) { r.NCCL.NCCLVersion = "2.28.7" }, Expectation{},
			map[string]health.Severity{"nccl-version-crash": health.Fail}, nil, health.Fail, nil},
		{"test failure, no table", func(r *TestResult) {
			r.Rows = nil
			r.Failures = []string{"Test NCCL failure common.cu:1005 'unhandled system error'"}
		}, Expectation{BusBWGBs: 10},
			map[string]health.Severity{"nccl-test-failure": health.Fail}, []string{"nccl-no-results", "nccl-busbw"}, health.Fail, nil},
		{"no table", func(r *TestResult) { r.Rows = nil; r.NCCL = nil }, Expectation{},
			map[string]health.Severity{"nccl-no-results": health.Fail}, nil, health.Fail, nil},
		{"plugin network", func(r *TestResult) { r.NCCL.Network = "AWS Libfabric" }, Expectation{},
			map[string]health.Severity{"nccl-network": health.Warn}, []string{"nccl-gdr"}, health.Warn, nil},
		{"rows but no footer: the run did not finish", func(r *TestResult) {
			r.OK, r.FooterSeen = false, false
			r.Reasons = []string{"no '# Out of bounds values' footer: the run did not finish"}
		}, Expectation{BusBWGBs: 20},
			map[string]health.Severity{"nccl-incomplete": health.Fail, "nccl-busbw": health.OK}, nil, health.Fail,
			map[string]string{"nccl-incomplete": "the run did not finish"}},
		{"not ok, and a finding already fails it", func(r *TestResult) {
			r.Rows[1].OutOfPlace.Wrong = wrongN(3)
			r.OK = false
			r.Reasons = []string{"1 row(s) with #wrong > 0: data corruption"}
		}, Expectation{}, map[string]health.Severity{"nccl-wrong": health.Fail}, []string{"nccl-incomplete"}, health.Fail, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			if tt.edit != nil {
				tt.edit(r)
			}
			fs := Diagnose(r, tt.exp)
			got := ids(fs)
			for id, sev := range tt.want {
				require.Contains(t, got, id, "%+v", fs)
				assert.Equal(t, sev, got[id].Severity, id)
			}
			for _, id := range tt.absent {
				assert.NotContains(t, got, id)
			}
			assert.Equal(t, tt.worst, Worst(fs), "%+v", fs)
			for id, w := range tt.words {
				f := got[id]
				all := f.Summary + " " + f.Remediation
				for _, e := range f.Evidence {
					all += " " + e
				}
				assert.Contains(t, all, w, id)
			}
			for _, f := range fs {
				assert.NotNil(t, f.Evidence, f.ID)
				if f.Severity == health.Warn || f.Severity == health.Fail {
					if f.ID != "nccl-warnings" {
						assert.NotEmpty(t, f.Remediation, f.ID)
					}
				}
			}
		})
	}
}

func TestDiagnoseRun(t *testing.T) {
	fs := DiagnoseRun(&RunResult{Failures: []LaunchFailure{{Kind: ncclog.FailSlots, Summary: "s", Fix: "f", Evidence: []string{"e"}}}}, Expectation{})
	require.Len(t, fs, 1)
	assert.Equal(t, "launch-not-enough-slots", fs[0].ID)
	fs = DiagnoseRun(&RunResult{Result: good()}, Expectation{})
	assert.Equal(t, health.OK, Worst(fs))
	assert.Equal(t, "nccl-no-output", DiagnoseRun(nil, Expectation{})[0].ID)
}

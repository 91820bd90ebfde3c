package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/nccl"
	"github.com/erdmakit/erdmakit/nccl/ncclog"
	"github.com/erdmakit/erdmakit/nvml/smitopo"
	"github.com/erdmakit/erdmakit/perf"
	"github.com/erdmakit/erdmakit/perf/perftest"
)

// Kind is which erdmakit result an Input holds: the command whose --json
// it is.
type Kind string

// The kinds of result a page renders.
const (
	KindDoctor      Kind = "doctor"         // erdma.Report: erdmakit doctor
	KindFleetDoctor Kind = "fleet-doctor"   // fleet.FleetReport: erdmakit fleet doctor
	KindFleetProve  Kind = "fleet-prove"    // fleet.Proof: erdmakit fleet prove
	KindMesh        Kind = "bw-mesh"        // fleet.MeshReport: erdmakit bw mesh
	KindBw          Kind = "bw"             // perf.Report: erdmakit bw run/loopback
	KindLatency     Kind = "bw-lat"         // perf.LatencyReport: erdmakit bw lat
	KindPerftest    Kind = "perftest"       // perftest.Summary: erdmakit perftest
	KindPerftestLat Kind = "perftest-lat"   // perftest.LatencySummary: erdmakit perftest lat
	KindNCCLRun     Kind = "nccl-run"       // nccl.RunReport: erdmakit nccl run
	KindNCCLTests   Kind = "parse-nccl"     // ncclog.TestResult: erdmakit parse nccl
	KindNCCLLog     Kind = "parse-nccl-log" // ncclog.Summary: erdmakit parse nccl-log
	KindPerftestLog Kind = "parse-perftest" // perftest.Report: erdmakit parse perftest
	KindSetup       Kind = "setup"          // erdmakit setup --json, doctor --fix --json (docs/setup.md)
	KindTopo        Kind = "parse-topo"     // smitopo.Matrix: erdmakit parse topo
)

// ErrUnknownInput is returned for a file that is not the JSON of a result
// this package knows; the error names the file.
var ErrUnknownInput = errors.New("not an erdmakit result this report knows")

// MaxInputBytes bounds one input file: 256 hosts' fleet results are a few
// MB; a larger file is refused rather than read into memory.
const MaxInputBytes = 256 << 20

// Input is one result to render: its kind, the decoded value and what the
// decoding noticed (keys this version does not know).
type Input struct {
	// Name labels the input on the page and in errors: the file name, or
	// what the caller chose.
	Name string
	Kind Kind
	// Time is when the result was made, as far as known (ReadFiles: the
	// file's modification time; zero when unknown). Where two inputs name
	// the same host and check, the page shows the newer one.
	Time  time.Time
	value any
	raw   []byte // the JSON it was read from (nil from a Go value)
	// unknown are the JSON keys (as paths) the value's type has no field
	// for: the input may come from a newer erdmakit.
	unknown []string
}

// Value is the decoded result: *erdma.Report, *fleet.FleetReport, *fleet.Proof,
// *fleet.MeshReport, *perf.Report, *perf.LatencyReport, *perftest.Summary,
// *perftest.LatencySummary, *nccl.RunReport, *ncclog.TestResult,
// *ncclog.Summary, *perftest.Report, *smitopo.Matrix or, for KindSetup,
// *SetupResult.
func (in Input) Value() any { return in.value }

// Unknown lists the keys of the input JSON that this version of erdmakit
// does not know (".hosts[].new_field"): a result from a newer erdmakit.
func (in Input) Unknown() []string { return append([]string(nil), in.unknown...) }

// FromValue makes an Input from a result value (one of the types Value
// lists, as a pointer: a *setup.Result is a *SetupResult); name labels it
// on the page.
func FromValue(name string, v any) (Input, error) {
	k := kindOf(v)
	if k == "" {
		return Input{}, fmt.Errorf("%s: %T: %w", name, v, ErrUnknownInput)
	}
	if isNilPointer(v) {
		return Input{}, fmt.Errorf("%s: a nil %T", name, v)
	}
	return Input{Name: name, Kind: k, value: v}, nil
}

// kindOf names the kind of a result value ("" for another type).
func kindOf(v any) Kind {
	switch v.(type) {
	case *erdma.Report:
		return KindDoctor
	case *fleet.FleetReport:
		return KindFleetDoctor
	case *fleet.Proof:
		return KindFleetProve
	case *fleet.MeshReport:
		return KindMesh
	case *perf.Report:
		return KindBw
	case *perf.LatencyReport:
		return KindLatency
	case *perftest.Summary:
		return KindPerftest
	case *perftest.LatencySummary:
		return KindPerftestLat
	case *nccl.RunReport:
		return KindNCCLRun
	case *ncclog.TestResult:
		return KindNCCLTests
	case *ncclog.Summary:
		return KindNCCLLog
	case *perftest.Report:
		return KindPerftestLog
	case *smitopo.Matrix:
		return KindTopo
	case *SetupResult:
		return KindSetup
	}
	return ""
}

// newValue returns a pointer to a zero value of kind k.
func newValue(k Kind) any {
	switch k {
	case KindDoctor:
		return &erdma.Report{}
	case KindFleetDoctor:
		return &fleet.FleetReport{}
	case KindFleetProve:
		return &fleet.Proof{}
	case KindMesh:
		return &fleet.MeshReport{}
	case KindBw:
		return &perf.Report{}
	case KindLatency:
		return &perf.LatencyReport{}
	case KindPerftest:
		return &perftest.Summary{}
	case KindPerftestLat:
		return &perftest.LatencySummary{}
	case KindNCCLRun:
		return &nccl.RunReport{}
	case KindNCCLTests:
		return &ncclog.TestResult{}
	case KindNCCLLog:
		return &ncclog.Summary{}
	case KindPerftestLog:
		return &perftest.Report{}
	case KindTopo:
		return &smitopo.Matrix{}
	case KindSetup:
		return &SetupResult{}
	}
	return nil
}

func isNilPointer(v any) bool {
	switch x := v.(type) {
	case *erdma.Report:
		return x == nil
	case *fleet.FleetReport:
		return x == nil
	case *fleet.Proof:
		return x == nil
	case *fleet.MeshReport:
		return x == nil
	case *perf.Report:
		return x == nil
	case *perf.LatencyReport:
		return x == nil
	case *perftest.Summary:
		return x == nil
	case *perftest.LatencySummary:
		return x == nil
	case *nccl.RunReport:
		return x == nil
	case *ncclog.TestResult:
		return x == nil
	case *ncclog.Summary:
		return x == nil
	case *perftest.Report:
		return x == nil
	case *smitopo.Matrix:
		return x == nil
	case *SetupResult:
		return x == nil
	}
	return v == nil
}

// ReadFile reads the JSON of an erdmakit result (at most MaxInputBytes)
// and makes an Input named after the file. It gives up when ctx ends (a
// FIFO without a writer does not hang it).
func ReadFile(ctx context.Context, path string) (Input, error) {
	b, err := ctxio.ReadFile(ctx, path, MaxInputBytes)
	if err != nil {
		if errors.Is(err, ctxio.ErrTooLarge) {
			return Input{}, fmt.Errorf("%s: larger than %d MiB: %w", path, MaxInputBytes>>20, ErrUnknownInput)
		}
		return Input{}, err
	}
	return FromJSON(path, b)
}

// FromJSON makes an Input from the --json output of an erdmakit command,
// recognised by its documented keys. Input that is not JSON, or JSON of
// something else, is an error wrapping ErrUnknownInput that names name.
func FromJSON(name string, data []byte) (Input, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Input{}, fmt.Errorf("%s: not a JSON object (%v): %w", name, err, ErrUnknownInput)
	}
	k, err := detect(top)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", name, err)
	}
	v := newValue(k)
	if err := json.Unmarshal(data, v); err != nil {
		return Input{}, fmt.Errorf("%s: the JSON of %s, but: %w", name, k, err)
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return Input{}, fmt.Errorf("%s: %w", name, err)
	}
	unknown := map[string]bool{}
	unknownKeys(generic, typeOf(v), "", unknown)
	in := Input{Name: name, Kind: k, value: v, raw: bytes.Clone(data)}
	for p := range unknown {
		in.unknown = append(in.unknown, p)
	}
	sort.Strings(in.unknown)
	return in, nil
}

// detect recognises a result by the keys its documented schema requires
// (docs/*.md): each kind by keys no other kind has at the top level.
func detect(top map[string]json.RawMessage) (Kind, error) {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := top[k]; !ok {
				return false
			}
		}
		return true
	}
	// An explicit marker wins, when a result carries one.
	if raw, ok := top["kind"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if newValue(Kind(s)) != nil {
				return Kind(s), nil
			}
			return "", fmt.Errorf("kind %q (a newer erdmakit's result?): %w", s, ErrUnknownInput)
		}
	}
	switch {
	case has("verdict", "culprits", "stages", "hosts"):
		return KindFleetProve, nil
	case has("status", "findings", "host"):
		return KindDoctor, nil
	case has("status", "size", "hosts", "by_status"):
		return KindFleetDoctor, nil
	case has("status", "hosts", "matrix", "rounds"):
		return KindMesh, nil
	case has("launcher_exit_code", "findings", "status"):
		return KindNCCLRun, nil
	case has("collective", "rows", "failures"):
		return KindNCCLTests, nil
	case has("nccl_lines", "transport", "nics"):
		return KindNCCLLog, nil
	case has("status", "total_gbps", "runs"):
		return KindPerftest, nil
	case has("status", "median_us", "runs"):
		return KindPerftestLat, nil
	case has("status", "results", "totals"):
		return KindBw, nil
	case has("status", "results") && resultsLookLike(top["results"], "median_us"):
		return KindLatency, nil
	case has("test", "link_type", "results", "errors"):
		return KindPerftestLog, nil
	case has("dry_run", "verdict", "stages", "left"):
		return KindSetup, nil
	case has("source", "endpoints", "links"):
		return KindTopo, nil
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "...")
	}
	return "", fmt.Errorf("top-level keys [%s] match no erdmakit --json result: %w", strings.Join(keys, " "), ErrUnknownInput)
}

// resultsLookLike reports whether raw is a list whose objects have key
// (an empty list counts: bw lat with every device failed), and a bw run's
// totals key is absent (checked before).
func resultsLookLike(raw json.RawMessage, key string) bool {
	var rs []map[string]json.RawMessage
	if json.Unmarshal(raw, &rs) != nil {
		return false
	}
	for _, r := range rs {
		if _, ok := r[key]; !ok {
			return false
		}
	}
	return true
}

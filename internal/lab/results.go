package lab

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Outcome is how one test ended.
type Outcome string

// Outcomes of a test.
const (
	Pass       Outcome = "PASS"
	Fail       Outcome = "FAIL"
	Skip       Outcome = "SKIP"
	Unfinished Outcome = "UNFINISHED" // started (=== RUN) and never reported: a crash, a timeout, a hang
)

// TestResult is one test (or subtest) of a test binary's -test.v output.
type TestResult struct {
	Name    string        `json:"name"` // "TestLabQP/oob"
	Outcome Outcome       `json:"outcome"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Output is what the test printed (t.Log, failures), at most maxOutput lines.
	Output []string `json:"output,omitempty"`
}

// Benchmark is one benchmark result line: name, iterations and each
// "value unit" pair (ns/op, B/op, allocs/op and ReportMetric units).
type Benchmark struct {
	Name    string             `json:"name"`
	N       int64              `json:"n"`
	Metrics map[string]float64 `json:"metrics"`
}

// TestOutput is what one test binary printed under -test.v.
type TestOutput struct {
	Tests      []TestResult `json:"tests"`
	Benchmarks []Benchmark  `json:"benchmarks,omitempty"`
	// Final is the binary's last verdict line: "PASS", "FAIL" or "" when it
	// printed none (it crashed or was killed).
	Final string `json:"final"`
	// Panic is the first line of a panic the binary printed ("panic: test
	// timed out after 2m0s"), if any.
	Panic string `json:"panic,omitempty"`
}

const maxOutput = 200

// ParseTestOutput reads a Go test binary's -test.v output: "=== RUN" starts
// a test, "--- PASS/FAIL/SKIP: name (1.23s)" ends it, benchmark lines carry
// their metrics, and the last "PASS"/"FAIL" line is the verdict. Lines it
// does not know are kept as the current test's output. Tests that started and
// never ended are Unfinished. It never fails on odd input; the error is only a
// read error.
func ParseTestOutput(r io.Reader) (*TestOutput, error) {
	out := &TestOutput{}
	index := map[string]int{} // test name -> position in out.Tests
	current := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	add := func(name string) *TestResult {
		if i, ok := index[name]; ok {
			return &out.Tests[i]
		}
		index[name] = len(out.Tests)
		out.Tests = append(out.Tests, TestResult{Name: name, Outcome: Unfinished})
		return &out.Tests[len(out.Tests)-1]
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "=== RUN "):
			current = strings.TrimSpace(strings.TrimPrefix(trim, "=== RUN "))
			if current != "" {
				add(current)
			}
		case strings.HasPrefix(trim, "=== PAUSE ") || strings.HasPrefix(trim, "=== CONT ") || strings.HasPrefix(trim, "=== NAME "):
			if f := strings.Fields(trim); len(f) >= 3 {
				current = f[2]
			}
		case strings.HasPrefix(trim, "--- PASS: ") || strings.HasPrefix(trim, "--- FAIL: ") || strings.HasPrefix(trim, "--- SKIP: "):
			name, elapsed := parseEnd(trim[len("--- PASS: "):])
			if name == "" {
				continue
			}
			t := add(name)
			t.Outcome = Outcome(trim[4:8])
			t.Elapsed = elapsed
			current = name
		case trim == "PASS" || trim == "FAIL":
			out.Final = trim
			current = ""
		case strings.HasPrefix(line, "Benchmark") && parseBench(line, out):
		default:
			if out.Panic == "" && strings.HasPrefix(line, "panic: ") {
				out.Panic = truncate(line, 200)
			}
			if current != "" {
				t := add(current)
				if len(t.Output) < maxOutput {
					t.Output = append(t.Output, truncate(line, 500))
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("test output: %w", err)
	}
	return out, nil
}

// parseEnd splits "TestX/sub (1.23s)" into the name and the duration.
func parseEnd(s string) (string, time.Duration) {
	s = strings.TrimSpace(s)
	i := strings.LastIndex(s, " (")
	if i < 0 {
		return s, 0
	}
	name := strings.TrimSpace(s[:i])
	d, err := time.ParseDuration(strings.TrimSuffix(s[i+2:], ")"))
	if err != nil {
		return name, 0
	}
	return name, d
}

// parseBench parses "BenchmarkX-2   1000   123.4 ns/op   0 B/op   0 allocs/op".
func parseBench(line string, out *TestOutput) bool {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return false
	}
	b := Benchmark{Name: f[0], N: n, Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return false
		}
		b.Metrics[f[i+1]] = v
	}
	out.Benchmarks = append(out.Benchmarks, b)
	return true
}

// Failed reports whether anything in the output is a failure: a failed or
// unfinished test, a panic, or a FAIL verdict. Skips count when strict
// (under CI: a lab test that skips inside the lab did not run).
func (o *TestOutput) Failed(strict bool) bool {
	if o.Final == "FAIL" || o.Panic != "" {
		return true
	}
	for _, t := range o.Tests {
		if t.Outcome == Fail || t.Outcome == Unfinished || (strict && t.Outcome == Skip) {
			return true
		}
	}
	return false
}

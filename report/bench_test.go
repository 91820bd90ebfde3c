package report

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// reportCPU reports the CPU seconds per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkWrite256Hosts renders the page of a 256-host cluster: the fleet
// doctor, the bw mesh (32640 pairs, its heat map one image) and one host's
// doctor, plus one of every other kind. It reports the page's size (the
// issue's bound: under 2 MB; rendering under 1 s).
func BenchmarkWrite256Hosts(b *testing.B) {
	benchWrite(b, append(fleetInputs(b, 256), fileInputs(b)...))
}

// BenchmarkReadWrite256HostsJSON is reading the same results back from their JSON
// (what `erdmakit report FILE...` does before Write).
func BenchmarkReadWrite256HostsJSON(b *testing.B) {
	var raw [][]byte
	var names []string
	for _, in := range append(fleetInputs(b, 256), fileInputs(b)...) {
		j, err := jsonOf(in)
		if err != nil {
			b.Fatal(err)
		}
		raw, names = append(raw, j), append(names, in.Name)
	}
	start := cpuTime()
	for b.Loop() {
		var ins []Input
		for i, j := range raw {
			in, err := FromJSON(names[i], j)
			if err != nil {
				b.Fatal(err)
			}
			ins = append(ins, in)
		}
		if err := Write(io.Discard, Options{Redact: true}, ins...); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkWrite256Doctors renders 256 hosts' own doctor reports (every
// other one failing), each an input of its own: the page lists their warn
// and fail findings with evidence and counts the ok ones per check.
func BenchmarkWrite256Doctors(b *testing.B) {
	benchWrite(b, doctorInputs(b, 256))
}

// benchWrite renders ins once for the page's size, then in the loop,
// reporting CPU seconds and MB per page.
func benchWrite(b *testing.B, ins []Input) {
	var page bytes.Buffer
	if err := Write(&page, Options{}, ins...); err != nil {
		b.Fatal(err)
	}
	start := cpuTime()
	for b.Loop() {
		if err := Write(io.Discard, Options{}, ins...); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
	b.ReportMetric(float64(page.Len())/1e6, "MB/page")
}

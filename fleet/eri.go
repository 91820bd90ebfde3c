package fleet

import (
	"fmt"
	"sort"
)

// nameDevices names on each of the mesh's culprits the ERIs (devices)
// slow or failing in most of its slow tests, when one device stands out.
func (rep *MeshReport) nameDevices() {
	e := meshDevices(rep)
	for _, list := range [][]Culprit{rep.DeadHosts, rep.BadHosts, rep.BadLinks} {
		for i := range list {
			list[i].Devices = e.of(list[i].Positions)
		}
	}
}

// eriStats tells which device index (ERI) of a pair test is at fault: the
// median Gbit/s of each index over the fleet's good tests, and the tests
// themselves.
type eriStats struct {
	m      *MeshReport
	median map[int]float64
}

func meshDevices(m *MeshReport) eriStats {
	per := map[int][]float64{}
	for _, r := range m.Results {
		for _, d := range r.Devices {
			if d.Error == "" {
				per[d.Index] = append(per[d.Index], d.Gbps)
			}
		}
	}
	med := map[int]float64{}
	for i, v := range per {
		med[i] = median(v)
	}
	return eriStats{m: m, median: med}
}

// slow lists the devices of r below 80 % of their index's median, or
// failed; nil when every device did as well as the others (the pair is
// slow as a whole, or one device result only).
func (e eriStats) slow(r PairResult) map[int]string {
	if len(r.Devices) < 2 {
		return nil
	}
	out := map[int]string{}
	for _, d := range r.Devices {
		if d.Error != "" || (e.median[d.Index] > 0 && d.Gbps < 0.8*e.median[d.Index]) {
			name := d.Name
			if name == "" {
				name = fmt.Sprintf("device %d", d.Index)
			}
			out[d.Index] = name
		}
	}
	if len(out) == len(r.Devices) {
		return nil // all of them: not one ERI's fault
	}
	return out
}

// of names the ERIs of a culprit at mesh positions pos: one host's
// (host) or a link's; [] for others (a rank that never joined).
func (e eriStats) of(pos []int) []string {
	switch len(pos) {
	case 1:
		return e.host(pos[0])
	case 2:
		return e.link(pos)
	}
	return []string{}
}

// host names the ERIs slow in most of the tests of mesh position h that
// were slow at all.
func (e eriStats) host(h int) []string {
	return e.common(func(r PairResult) bool { return r.Server == h || r.Client == h })
}

// link names the ERIs slow in most of the slow tests between mesh
// positions pos[0] and pos[1].
func (e eriStats) link(pos []int) []string {
	if len(pos) != 2 {
		return []string{}
	}
	a, b := pos[0], pos[1]
	return e.common(func(r PairResult) bool { return (r.Server == a && r.Client == b) || (r.Server == b && r.Client == a) })
}

func (e eriStats) common(match func(PairResult) bool) []string {
	count := map[int]int{}
	names := map[int]string{}
	tests := 0
	for _, list := range [][]PairResult{e.m.Results, e.m.SecondPass} {
		for _, r := range list {
			if !match(r) {
				continue
			}
			s := e.slow(r)
			if len(s) == 0 {
				continue
			}
			tests++
			for i, n := range s {
				count[i]++
				names[i] = n
			}
		}
	}
	out := []string{}
	var idx []int
	for i, c := range count {
		if 2*c > tests {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	for _, i := range idx {
		out = append(out, names[i])
	}
	return out
}

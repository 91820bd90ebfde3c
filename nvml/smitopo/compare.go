package smitopo

// Difference is a pair of endpoints whose link two matrices disagree on.
type Difference struct {
	A     string `json:"a"` // "GPU0"
	B     string `json:"b"` // "erdma_0" (NICs by legend name)
	Ours  Link   `json:"ours"`
	Their Link   `json:"theirs"`
}

// Comparison is the result of Compare (nvml.Comparison).
type Comparison struct {
	Differences []Difference `json:"differences"`
	// OnlyOurs and OnlyTheirs are endpoints one matrix has and the other
	// does not (nvidia-smi lists every NIC, erdmakit only eRDMA ones).
	OnlyOurs   []string `json:"only_ours,omitempty"`
	OnlyTheirs []string `json:"only_theirs,omitempty"`
}

// endpointKey names an endpoint across matrices: GPUs by label (NVML and
// nvidia-smi number them alike), NICs by their legend name.
func endpointKey(e Endpoint) string {
	if e.IsGPU() || e.Name == "" {
		return e.Label
	}
	return e.Name
}

// Compare lists the GPU<->NIC and GPU<->GPU cells where ours (computed
// from sysfs) and theirs (parsed nvidia-smi topo -m) disagree. NVLink
// cells (NV#) in theirs are not compared with PCIe words in ours.
func Compare(ours, theirs *Matrix) Comparison {
	c := Comparison{Differences: []Difference{}}
	idx := func(m *Matrix) map[string]int {
		out := map[string]int{}
		for i, e := range m.Endpoints {
			out[endpointKey(e)] = i
		}
		return out
	}
	oi, ti := idx(ours), idx(theirs)
	for _, e := range ours.Endpoints {
		if _, ok := ti[endpointKey(e)]; !ok {
			c.OnlyOurs = append(c.OnlyOurs, endpointKey(e))
		}
	}
	for _, e := range theirs.Endpoints {
		if _, ok := oi[endpointKey(e)]; !ok {
			c.OnlyTheirs = append(c.OnlyTheirs, endpointKey(e))
		}
	}
	for i, a := range ours.Endpoints {
		if !a.IsGPU() {
			continue
		}
		for j, b := range ours.Endpoints {
			if j == i || (b.IsGPU() && j < i) {
				continue
			}
			ta, okA := ti[endpointKey(a)]
			tb, okB := ti[endpointKey(b)]
			if !okA || !okB || ta >= len(theirs.Links) || tb >= len(theirs.Links[ta]) || i >= len(ours.Links) || j >= len(ours.Links[i]) {
				continue
			}
			o, t := ours.Links[i][j], theirs.Links[ta][tb]
			if o == t || t.NVLinks() > 0 || o == "" {
				continue
			}
			c.Differences = append(c.Differences, Difference{A: endpointKey(a), B: endpointKey(b), Ours: o, Their: t})
		}
	}
	return c
}

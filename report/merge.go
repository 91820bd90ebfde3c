package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
)

// Many inputs may name one host: fleet doctor and fleet prove both ran the
// doctor on it, a bw mesh and fleet prove's mesh both judged it. The page
// shows each host and check once, from the newest input that judged it,
// and says which input that is and which older ones it replaces; the
// counts (hosts, checks over the hosts, culprits) count it once.

// newness ranks the inputs from the oldest (0) to the newest: by Time
// when every input has one (ties by their order), else by their order
// (the later the newer).
func newness(inputs []Input) []int {
	idx := make([]int, len(inputs))
	for i := range idx {
		idx[i] = i
	}
	if allTimed(inputs) {
		sort.SliceStable(idx, func(a, b int) bool { return inputs[idx[a]].Time.Before(inputs[idx[b]].Time) })
	}
	rank := make([]int, len(inputs))
	for r, i := range idx {
		rank[i] = r
	}
	return rank
}

func allTimed(inputs []Input) bool {
	for _, in := range inputs {
		if in.Time.IsZero() {
			return false
		}
	}
	return len(inputs) > 0
}

// newestRule says how the page chose the newest input.
func newestRule(inputs []Input) string {
	if allTimed(inputs) {
		return "the file modified last"
	}
	return "the one given last"
}

// claim is what one input judged of one host: its doctor checks (all of
// them together: a fleet doctor lists only a host's problems, so its word
// that a host is fine replaces an older failing doctor), or one other
// check (a mesh's, a culprit's).
type claim struct{ host, check string }

func claimOf(f finding) claim {
	if f.doctor {
		return claim{f.Host, ""}
	}
	return claim{f.Host, f.ID}
}

// mergeFindings keeps, for each host and check, the findings of the
// newest input that judged it (a host's doctor checks go together); the
// findings of no host (an NCCL run's) all stay. It returns how many
// claims more than one input made.
func mergeFindings(all []finding, rows []hostRow) ([]finding, int) {
	type judged struct {
		newness int
		source  string
		by      map[string]bool // the inputs that judged it
		order   []string
	}
	claims := map[claim]*judged{}
	note := func(c claim, newness int, source string) {
		j := claims[c]
		if j == nil {
			j = &judged{newness: -1, by: map[string]bool{}}
			claims[c] = j
		}
		if newness > j.newness {
			j.newness, j.source = newness, source
		}
		if !j.by[source] {
			j.by[source] = true
			j.order = append(j.order, source)
		}
	}
	for _, f := range all {
		if f.Host != "" {
			note(claimOf(f), f.newness, f.Source)
		}
	}
	for _, h := range rows {
		if h.doctor {
			note(claim{h.Host, ""}, h.newness, h.Source)
		}
	}
	kept := all[:0:0]
	for _, f := range all {
		if f.Host == "" {
			kept = append(kept, f)
			continue
		}
		j := claims[claimOf(f)]
		if f.newness != j.newness {
			continue
		}
		var older []string
		for _, src := range j.order {
			if src != f.Source {
				older = append(older, src)
			}
		}
		f.Replaces = strings.Join(older, ", ")
		kept = append(kept, f)
	}
	merged := 0
	for _, j := range claims {
		if len(j.by) > 1 {
			merged++
		}
	}
	return kept, merged
}

// hostRows is one row per host named by an input, in the order they were
// first named, from the findings merged: its warn and fail checks counted
// once each, its status the worst of them (or the newest input's word for
// a host with no finding: missing, not reached).
func hostRows(rows []hostRow, kept []finding) []hostRow {
	byHost := map[string]*hostRow{}
	var order []string
	add := func(name string) *hostRow {
		h := byHost[name]
		if h == nil {
			h = &hostRow{Host: name, Status: fleet.HostOK, newness: -1}
			byHost[name] = h
			order = append(order, name)
		}
		return h
	}
	sources := map[string][]string{}
	addSource := func(host, src string) {
		for _, s := range sources[host] {
			if s == src {
				return
			}
		}
		sources[host] = append(sources[host], src)
	}
	named := map[string]string{} // the newest input naming each host
	for _, r := range rows {
		h := add(r.Host)
		if r.newness >= h.newness {
			named[r.Host] = r.Source
		}
		// The newest input's own word on the host, kept where it is not
		// a health severity (missing, error, not reached).
		if r.newness > h.newness && r.doctor {
			h.newness = r.newness
			if !r.Status.Reported() && r.Status != "" {
				h.Status = r.Status
			}
		}
	}
	seen := map[string]map[string]bool{} // host -> check ids counted
	for _, f := range kept {
		if f.Host == "" {
			continue
		}
		names := strings.Split(f.Host, " <-> ")
		for _, name := range names {
			if _, ok := byHost[name]; !ok && len(names) > 1 {
				continue // a link's end no input named as a host
			}
			h := add(name)
			addSource(name, f.Source)
			h.Status = fleet.WorseState(h.Status, fleet.StateOf(f.Severity))
			if f.Severity.Rank() == 0 && f.Severity.Valid() {
				continue
			}
			if seen[name] == nil {
				seen[name] = map[string]bool{}
			}
			if seen[name][f.ID] {
				continue
			}
			seen[name][f.ID] = true
			h.Problems = append(h.Problems, f.ID)
			if f.Severity == health.Warn {
				h.Warn++
			} else if f.Severity != health.Skip {
				h.Fail++
			}
		}
	}
	out := make([]hostRow, 0, len(order))
	for _, name := range order {
		h := *byHost[name]
		sort.Strings(h.Problems)
		if len(sources[name]) == 0 && named[name] != "" {
			sources[name] = []string{named[name]} // a host with no finding: the input that named it
		}
		h.Source = strings.Join(sources[name], ", ")
		out = append(out, h)
	}
	return out
}

// mergeCulprits keeps each culprit (kind and hosts) once, the newest
// input's, in the order they were first named.
func mergeCulprits(cs []culprit) []culprit {
	at := map[string]int{}
	var out []culprit
	for _, c := range cs {
		k := c.Kind + "\x00" + c.Hosts
		if i, ok := at[k]; ok {
			if c.newness > out[i].newness {
				out[i] = c
			}
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	return out
}

// The first thing to fix for each of bw mesh's culprits.
const (
	fixDeadHost = "run erdmakit doctor on the host; check that it runs the rank (mpirun/srun) and its eRDMA devices are active"
	fixBadHost  = "run erdmakit doctor on the host: it is slow against every peer"
	fixBadLink  = "test the pair again (erdmakit bw run); a link slow only between these two points at the network path, not a host"
)

// meshCulprits are a bw mesh's dead and slow hosts and slow links as the
// verdict's culprits (fleet prove's word where it judged the same).
func meshCulprits(m *fleet.MeshReport, source string, newness int) []culprit {
	var out []culprit
	add := func(kind string, cs []fleet.Culprit, fix string) {
		for _, c := range cs {
			k := c.Kind
			if k == "" {
				k = kind // a report older than the culprit's kind
			}
			out = append(out, culprit{Kind: k, Hosts: pair(c.Hosts), Reason: c.Reason, Fix: fix,
				FixFrom: fmt.Sprintf("bw mesh, %s", source), Severity: health.Fail, newness: newness})
		}
	}
	add(fleet.CulpritHost, m.DeadHosts, fixDeadHost)
	add(fleet.CulpritHost, m.BadHosts, fixBadHost)
	add(fleet.CulpritLink, m.BadLinks, fixBadLink)
	return out
}

package fleet

import "github.com/erdmakit/erdmakit/health"

// Culprit kinds.
const (
	CulpritHost = "host" // one host: its doctor failed, or the mesh blames it
	CulpritLink = "link" // a pair of hosts, each fine with others
	CulpritNCCL = "nccl" // the NCCL run across the hosts
)

// Culprit is one host, link or NCCL run at fault, with why: bw mesh names
// its dead and bad hosts and bad links (MeshReport), fleet prove every
// culprit its stages found, each with the first thing to fix (Proof). Its
// lists are [] when empty, never null.
type Culprit struct {
	Kind     string          `json:"kind"`     // CulpritHost, CulpritLink, CulpritNCCL
	Severity health.Severity `json:"severity"` // fail or warn
	Hosts    []string        `json:"hosts"`    // one host, the two ends of a link; [] for NCCL when no host is named
	// Ranks are the launcher ranks of Hosts (-1: a host NCCL named that is
	// not the job's); a mesh run without a launcher (RunMesh) has its
	// positions as ranks.
	Ranks []int `json:"ranks"`
	// Positions are the mesh positions of Hosts (MeshReport.Hosts and
	// Matrix index them); [] when no mesh named it (a doctor's or NCCL's
	// culprit, a rank that never joined the mesh).
	Positions []int `json:"positions"`
	// Stages that found it: "doctor", "mesh", "nccl".
	Stages []string `json:"stages"`
	Reason string   `json:"reason"`
	// Evidence: what the stages saw (findings' summaries, measured Gbit/s).
	Evidence []string `json:"evidence"`
	// Devices are the ERIs (device names) the mesh found slow or failing
	// on this host or link; [] when it could not tell one from another.
	Devices []string `json:"devices"`
	// Fix is the first thing to do: the remediation of the host's first
	// failing doctor finding (in the guide's order), else the stage's own;
	// "" in bw mesh's own report.
	Fix string `json:"fix,omitempty"`
	// FixFrom names where Fix comes from: a finding id ("gdr-peermem"), or
	// the stage ("mesh", "nccl") when no finding explains it.
	FixFrom string `json:"fix_from,omitempty"`
}

// ProofCulprit is fleet prove's culprit, the same type as bw mesh's.
//
// Deprecated: use Culprit.
type ProofCulprit = Culprit

// newCulprit is the one constructor of a culprit: its lists never nil.
func newCulprit(kind string, sev health.Severity, stage, reason string) *Culprit {
	return &Culprit{Kind: kind, Severity: sev, Hosts: []string{}, Ranks: []int{}, Positions: []int{}, Stages: []string{stage},
		Reason: reason, Evidence: []string{}, Devices: []string{}}
}

// on names the culprit's hosts: host names with their launcher ranks.
func (c *Culprit) on(hosts []string, ranks []int) *Culprit {
	c.Hosts = append(c.Hosts, hosts...)
	c.Ranks = append(c.Ranks, ranks...)
	return c
}

// at names the culprit's hosts by their mesh positions in m: their names,
// launcher ranks (MeshReport.RankAt) and positions.
func (c *Culprit) at(m *MeshReport, positions ...int) *Culprit {
	for _, p := range positions {
		c.Hosts = append(c.Hosts, m.HostAt(p))
		c.Ranks = append(c.Ranks, m.RankAt(p))
		c.Positions = append(c.Positions, p)
	}
	return c
}

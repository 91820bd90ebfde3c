package fleet

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
)

// WriteTable prints a fleet report the way `erdmakit fleet doctor` does:
// hosts by rank with their status and problems, the count per status, the
// checks that differ between hosts and the rendezvous's problems. color
// colours the severity words.
func WriteTable(w io.Writer, rep *FleetReport, color bool) error {
	var b strings.Builder
	t := render.NewTable("RANK", "HOST", "STATUS", "PROBLEMS")
	t.Color, t.SeverityColumn = color, 2
	for _, h := range rep.Hosts {
		probs := strings.Join(h.Problems, ",")
		if h.Error != "" {
			probs = h.Error
		}
		t.Add(fmt.Sprint(h.Rank), h.Host, string(h.Status), probs)
	}
	if err := t.Write(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%d hosts:", rep.Size)
	for _, s := range []health.Severity{health.OK, health.Warn, health.Fail, Errored, Missing, NotReached} {
		if n := len(rep.ByStatus[s]); n > 0 {
			fmt.Fprintf(&b, " %d %s", n, s)
		}
	}
	fmt.Fprintln(&b)
	if len(rep.Differences) > 0 {
		fmt.Fprintln(&b, "\nChecks that differ between hosts (the rarest result first):")
		d := render.NewTable("CHECK", "SEVERITY", "HOSTS", "SUMMARY")
		d.Color, d.SeverityColumn = color, 1
		for _, diff := range rep.Differences {
			for _, gr := range diff.Groups {
				d.Add(diff.ID, string(gr.Severity), hostList(gr.Hosts, 6), gr.Summary)
			}
		}
		if err := d.Write(&b); err != nil {
			return err
		}
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(&b, "rendezvous:", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hostList shortens a long host list: "a, b, c and 12 more".
func hostList(hosts []string, max int) string {
	if len(hosts) <= max {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:max], ", "), len(hosts)-max)
}

// WriteMeshTable prints a mesh report the way `erdmakit bw mesh` does: the
// summary line, the pairwise Gbit/s matrix (up to 16 hosts), the culprits
// (dead host, bad host, bad link, transient) and the rendezvous's problems.
func WriteMeshTable(w io.Writer, rep *MeshReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hosts, %d rounds, %d pair tests; median %.2f Gbit/s", len(rep.Hosts), rep.Rounds, len(rep.Results), rep.MedianGbps)
	if rep.ExpectGbps > 0 {
		fmt.Fprintf(&b, ", expected %.2f", rep.ExpectGbps)
	}
	fmt.Fprintln(&b)
	if len(rep.Hosts) <= 16 {
		t := render.NewTable(append([]string{"GBPS"}, rep.Hosts...)...)
		for i, row := range rep.Matrix {
			cells := []string{rep.Hosts[i]}
			for j, v := range row {
				switch {
				case i == j:
					cells = append(cells, "-")
				case v == nil:
					cells = append(cells, "fail")
				default:
					cells = append(cells, fmt.Sprintf("%.1f", *v))
				}
			}
			t.Add(cells...)
		}
		fmt.Fprintln(&b)
		if err := t.Write(&b); err != nil {
			return err
		}
	}
	culprits := render.NewTable("VERDICT", "HOSTS", "REASON", "EVIDENCE")
	add := func(kind string, cs []Culprit) {
		for _, c := range cs {
			culprits.Add(kind, strings.Join(c.Hosts, " <-> "), c.Reason, strings.Join(c.Evidence, "; "))
		}
	}
	add("dead host", rep.DeadHosts)
	add("bad host", rep.BadHosts)
	add("bad link", rep.BadLinks)
	for _, p := range rep.Transient {
		culprits.Add("transient", rep.Hosts[p.Server]+" <-> "+rep.Hosts[p.Client], "slow once, fine when tested again", "")
	}
	if len(culprits.Rows) > 0 {
		fmt.Fprintln(&b)
		if err := culprits.Write(&b); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(&b, "\nno outliers: every pair within the expectation and the fleet median")
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(&b, "rendezvous:", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

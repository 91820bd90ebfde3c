package fleet

import (
	"fmt"
	"io"
	"strings"

	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/render"
)

// WriteProof prints a proof the way `erdmakit fleet prove` does: the
// verdict, the stages, the culprits each with the first thing to fix, the
// hosts that are not ok, the rendezvous's problems. color colours the
// severity words.
func WriteProof(w io.Writer, p *Proof, color bool) error {
	var b strings.Builder
	word := func(s string) string {
		if color {
			return render.Severity(s)
		}
		return s
	}
	fmt.Fprintf(&b, "erdmakit fleet prove: %d ranks, verdict %s\n\n", p.Size, strings.ToUpper(string(p.Verdict)))
	st := render.NewTable("STAGE", "STATUS", "SECONDS", "SUMMARY")
	st.Color, st.SeverityColumn = color, 1
	for _, s := range p.Stages {
		st.Add(s.Name, string(s.Status), fmt.Sprintf("%.1f", s.Seconds), s.Summary)
	}
	if err := st.Write(&b); err != nil {
		return err
	}
	if len(p.Culprits) > 0 {
		fmt.Fprintf(&b, "\nCulprits (%d), failing first, each with the first thing to fix:\n", len(p.Culprits))
		for i, c := range p.Culprits {
			hosts := strings.Join(c.Hosts, " <-> ")
			if hosts == "" {
				hosts = "(all hosts)"
			}
			fmt.Fprintf(&b, "%d. %s %s %s: %s\n", i+1, word(string(c.Severity)), c.Kind, hosts, c.Reason)
			if len(c.Devices) > 0 {
				fmt.Fprintf(&b, "    eri:  %s\n", strings.Join(c.Devices, ", "))
			}
			for _, e := range c.Evidence {
				fmt.Fprintf(&b, "    saw:  %s\n", e)
			}
			fmt.Fprintf(&b, "    fix:  %s", c.Fix)
			if c.FixFrom != "" {
				fmt.Fprintf(&b, " (%s)", c.FixFrom)
			}
			fmt.Fprintln(&b)
		}
	}
	var notOK int
	ht := render.NewTable("RANK", "HOST", "STATUS", "DOCTOR", "MESH", "PROBLEMS")
	ht.Color, ht.SeverityColumn = color, 2
	for _, h := range p.Hosts {
		if h.Status == health.OK && (h.Mesh == "ok" || h.Mesh == "not tested") {
			continue
		}
		notOK++
		var probs []string
		for _, f := range h.Findings {
			probs = append(probs, f.ID)
		}
		mesh := h.Mesh
		if h.MeshNote != "" {
			mesh += " (" + h.MeshNote + ")"
		}
		ht.Add(fmt.Sprint(h.Rank), h.Host, string(h.Status), string(h.Doctor), mesh, strings.Join(probs, ","))
	}
	if notOK > 0 {
		fmt.Fprintf(&b, "\nHosts not ok, or on a bad link (%d of %d):\n", notOK, len(p.Hosts))
		if err := ht.Write(&b); err != nil {
			return err
		}
	}
	for _, e := range p.Errors {
		fmt.Fprintln(&b, "error:", e)
	}
	if !p.Authenticated && p.Size > 1 {
		fmt.Fprintln(&b, "\nthe ranks were not authenticated (ERDMAKIT_FLEET_SECRET not set)")
	}
	fmt.Fprintf(&b, "\nverdict: %s (status %s)\n", verdictWord(p), word(string(p.Status)))
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictWord is the verdict, with a word on an interrupted run.
func verdictWord(p *Proof) string {
	s := string(p.Verdict)
	if p.Interrupted {
		s += " (interrupted: stages not reached are listed)"
	}
	return s
}

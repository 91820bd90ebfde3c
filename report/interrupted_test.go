package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
)

// A fleet prove interrupted during its mesh, after 9.6 s and 2 pairs: the
// mesh stage is "interrupted" (with what it measured), the NCCL stage,
// never begun, "not reached" (report-2 item 8), on the page and in the
// text table.
func TestInterruptedStageIsNotNotReached(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fleet-prove-4.json"))
	require.NoError(t, err)
	var p fleet.Proof
	require.NoError(t, json.Unmarshal(b, &p))
	require.NotNil(t, p.Mesh)
	p.Interrupted = true
	p.Mesh.Interrupted = true
	p.Mesh.Results = p.Mesh.Results[:2]
	p.NCCL = nil
	for i, s := range p.Stages {
		switch s.Name {
		case fleet.StageMesh:
			p.Stages[i] = fleet.Stage{Name: s.Name, Status: fleet.StageNotReached, Summary: "interrupted: 2 pairs of 4 hosts in 3 rounds, median 39.9 Gbit/s", Seconds: 9.6}
		case fleet.StageNCCL:
			p.Stages[i] = fleet.Stage{Name: s.Name, Status: fleet.StageNotReached, Summary: "the run was interrupted before this stage"}
		}
	}
	in, err := FromValue("prove.json", &p)
	require.NoError(t, err)
	pg, err := build(Options{}, []Input{in})
	require.NoError(t, err)
	stages := map[string]string{}
	for _, r := range pg.Sections[0].Tables[0].Rows {
		stages[r.Cells[0]] = r.Cells[1]
	}
	assert.Equal(t, map[string]string{"doctor": "fail", "mesh": "interrupted", "nccl": "not reached"}, stages)
	var out bytes.Buffer
	require.NoError(t, Write(&out, Options{}, in))
	assert.Contains(t, out.String(), `<td>mesh</td><td>interrupted</td><td>interrupted: 2 pairs of 4 hosts`)
	var text strings.Builder
	require.NoError(t, WriteProofTable(&text, &p, TableOptions{}))
	var meshLine, ncclLine string
	for _, l := range strings.Split(text.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "mesh "):
			meshLine = l
		case strings.HasPrefix(l, "nccl "):
			ncclLine = l
		}
	}
	assert.Regexp(t, `^mesh\s+interrupted\s+9\.6\s+interrupted: 2 pairs`, meshLine)
	assert.Regexp(t, `^nccl\s+not reached\s+0\.0`, ncclLine)
}

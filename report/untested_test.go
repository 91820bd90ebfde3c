package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/plot"
)

// screenMesh is three hosts of a screen: 0-1 measured, 0-2 failed, 1-2 never
// tested. Both pairs without a figure are null in the matrix.
func screenMesh() *fleet.MeshReport {
	g := 25.0
	return &fleet.MeshReport{
		Hosts:      []string{"a", "b", "c"},
		Schedule:   fleet.ScheduleScreen,
		MedianGbps: 25, ExpectGbps: 25,
		Matrix: fleet.Matrix{{nil, &g, nil}, {&g, nil, nil}, {nil, nil, nil}},
		Results: []fleet.PairResult{
			{Pair: fleet.Pair{Server: 0, Client: 1}, Pass: 1, Gbps: 25},
			{Pair: fleet.Pair{Server: 2, Client: 0}, Pass: 1, Error: "connect: connection refused"},
		},
	}
}

// TestUntestedPairIsNotAFailure: a pair the screen never asked for is
// "not tested" in the table (".") and on the heat map, never "fail" or the
// failed grey; the failed pair still is.
func TestUntestedPairIsNotAFailure(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMeshTable(&b, screenMesh(), TableOptions{}))
	lines := strings.Split(b.String(), "\n")
	var rowB, rowC string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "b "):
			rowB = l
		case strings.HasPrefix(l, "c "):
			rowC = l
		}
	}
	assert.Equal(t, []string{"b", "25.0", "-", "."}, strings.Fields(rowB))
	assert.Equal(t, []string{"c", "fail", ".", "-"}, strings.Fields(rowC))
	assert.Contains(t, b.String(), "not tested")

	m := MeshOf(screenMesh())
	require.NotNil(t, m.Tested)
	var svg bytes.Buffer
	require.NoError(t, plot.Heatmap(&svg, m))
	assert.Equal(t, 2, strings.Count(svg.String(), `class="cell untested"`), "1-2 both ways")
	assert.Equal(t, 2, strings.Count(svg.String(), `class="cell none"`), "the failed 0-2 both ways")
	assert.Contains(t, svg.String(), "not tested (screen)")

	in, err := FromValue("screen.json", screenMesh())
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, Write(&page, Options{}, in))
	assert.Contains(t, page.String(), "Pale grey: not tested")

	full := screenMesh()
	full.Results = append(full.Results, fleet.PairResult{Pair: fleet.Pair{Server: 1, Client: 2}, Pass: 1, Error: "timeout"})
	assert.Nil(t, MeshOf(full).Tested, "every pair tested: no 'not tested' legend")
}
